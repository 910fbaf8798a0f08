// Throughput harness for Guava's BloomFilter, mirroring the Rust benchmark.
//
// Usage: java -cp <classes>:<guava.jar> GuavaBench --n N --fpp P --threads T --keys int|url
//            [--seconds-warmup S] [--passes P]
//
// Key scheme (shared with the Rust benchmark):
//   int: Integer i, Funnels.integerFunnel()
//   url: "https://host" + (i % 1024) + ".example.com/section/" + (i % 97) + "/page-" + i + ".html",
//        Funnels.stringFunnel(UTF_8)
//   present keys are i in [0, N), absent keys are i in [N, 2N).
//
// Phases (each with T threads working on disjoint contiguous slices):
//   put               put all N present keys
//   contains_present  mightContain over the N present keys
//   contains_absent   mightContain over the N absent keys (counts false positives)
// --passes P runs the three phases P times, each time on a fresh filter, and reports the
// median of each phase (default 1).
// Output: one TSV line per phase on stdout:
//   guava <keys> <n> <threads> <phase> <ops> <seconds> <Mops_per_s> <false_positives or ->
// Notes go to stderr prefixed with '#'.
//
// URL keys are pre-generated before timing when they fit comfortably in the heap; otherwise
// (e.g. N=1e8) they are built on the fly inside the timed loops of every phase, which then
// includes string construction cost (a note is printed). Int keys are always boxed on the fly
// (Guava's API takes Integer), which is part of what a Guava user pays.

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

public final class GuavaBench {

    enum Phase { PUT, CONTAINS_PRESENT, CONTAINS_ABSENT }

    static String urlKey(long i) {
        return "https://host" + (i % 1024) + ".example.com/section/" + (i % 97) + "/page-" + i + ".html";
    }

    /** A source of keys for index i; either pre-generated or computed on the fly. */
    interface KeySource {
        Object key(long i);
    }

    static final class IntKeys implements KeySource {
        @Override
        public Object key(long i) {
            return Integer.valueOf((int) i);
        }
    }

    static final class OnTheFlyUrlKeys implements KeySource {
        @Override
        public Object key(long i) {
            return urlKey(i);
        }
    }

    static final class PregeneratedUrlKeys implements KeySource {
        private final long base;
        private final String[] keys;

        PregeneratedUrlKeys(long base, int count, int threads) throws InterruptedException {
            this.base = base;
            this.keys = new String[count];
            runParallel(threads, count, (from, to) -> {
                for (long i = from; i < to; i++) keys[(int) i] = urlKey(base + i);
                return 0;
            });
        }

        @Override
        public Object key(long i) {
            return keys[(int) (i - base)];
        }
    }

    interface SliceTask {
        long run(long from, long to);
    }

    /** Splits [0, count) into `threads` contiguous slices; returns the sum of the task results. */
    static long runParallel(int threads, long count, SliceTask task) throws InterruptedException {
        if (threads == 1) return task.run(0, count);
        AtomicLong total = new AtomicLong();
        Thread[] ts = new Thread[threads];
        java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
        for (int t = 0; t < threads; t++) {
            long from = count * t / threads;
            long to = count * (t + 1) / threads;
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                total.addAndGet(task.run(from, to));
            });
            ts[t].start();
        }
        start.countDown();
        for (Thread t : ts) t.join();
        return total.get();
    }

    @SuppressWarnings("unchecked")
    static long runPhase(BloomFilter<Object> filter, Phase phase, KeySource keys, long base, long count,
            int threads) throws InterruptedException {
        return runParallel(threads, count, (from, to) -> {
            long hits = 0;
            switch (phase) {
                case PUT:
                    for (long i = from; i < to; i++) {
                        if (filter.put(keys.key(base + i))) hits++;
                    }
                    break;
                default:
                    for (long i = from; i < to; i++) {
                        if (filter.mightContain(keys.key(base + i))) hits++;
                    }
                    break;
            }
            return hits;
        });
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static BloomFilter<Object> newFilter(String keyKind, long n, double fpp) {
        if (keyKind.equals("int")) {
            return (BloomFilter) BloomFilter.create(Funnels.integerFunnel(), n, fpp);
        }
        return (BloomFilter) BloomFilter.create(Funnels.stringFunnel(StandardCharsets.UTF_8), n, fpp);
    }

    static KeySource onTheFly(String keyKind) {
        return keyKind.equals("int") ? new IntKeys() : new OnTheFlyUrlKeys();
    }

    /**
     * Warms the JIT on a separate 1e6-key filter, using the same KeySource classes as the timed
     * run so that call sites do not get re-profiled (and recompiled) during measurement.
     */
    static void warmUp(String keyKind, double fpp, int threads, double seconds, boolean pregen)
            throws InterruptedException {
        final long n = 1_000_000L; // 1e6 puts + 1e6 present lookups + 1e6 absent lookups per round
        KeySource present = onTheFly(keyKind);
        KeySource absent = present;
        if (pregen) {
            present = new PregeneratedUrlKeys(0, (int) n, threads);
            absent = new PregeneratedUrlKeys(n, (int) n, threads);
        }
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        long sink = 0;
        int rounds = 0;
        do {
            BloomFilter<Object> f = newFilter(keyKind, n, fpp);
            sink += runPhase(f, Phase.PUT, present, 0, n, threads);
            sink += runPhase(f, Phase.CONTAINS_PRESENT, present, 0, n, threads);
            sink += runPhase(f, Phase.CONTAINS_ABSENT, absent, n, n, threads);
            rounds++;
        } while (System.nanoTime() < deadline);
        System.err.println("# warmup: " + rounds + " round(s) of 3e6 ops, sink=" + sink);
    }

    static void report(String keyKind, long n, int threads, String phase, long ops, long nanos, String fp) {
        double secs = nanos / 1e9;
        double mops = ops / secs / 1e6;
        System.out.println(String.format(Locale.ROOT, "guava\t%s\t%d\t%d\t%s\t%d\t%.6f\t%.3f\t%s",
                keyKind, n, threads, phase, ops, secs, mops, fp));
        System.out.flush();
    }

    /** The median (the upper one for an even count). */
    static long median(long[] values) {
        long[] sorted = values.clone();
        java.util.Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    static void usage() {
        System.err.println("usage: GuavaBench --n N --fpp P --threads T --keys int|url [--seconds-warmup S] [--passes P]");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        long n = -1;
        double fpp = 0.01;
        int threads = 1;
        String keyKind = null;
        double warmupSeconds = 0;
        int passes = 1;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) usage();
            String v = args[++i];
            switch (a) {
                case "--n": n = (long) Double.parseDouble(v); break; // accepts 1e6 as well as 1000000
                case "--fpp": fpp = Double.parseDouble(v); break;
                case "--threads": threads = Integer.parseInt(v); break;
                case "--keys": keyKind = v; break;
                case "--seconds-warmup": warmupSeconds = Double.parseDouble(v); break;
                case "--passes": passes = Integer.parseInt(v); break;
                default: usage();
            }
        }
        if (n <= 0 || threads <= 0 || passes <= 0 || keyKind == null || !(keyKind.equals("int") || keyKind.equals("url"))) {
            usage();
        }
        if (keyKind.equals("int") && 2 * n > (long) Integer.MAX_VALUE + 1) {
            System.err.println("--keys int needs 2N <= 2^31");
            System.exit(2);
        }

        KeySource present;
        KeySource absent;
        boolean pregen = false;
        if (keyKind.equals("url")) {
            // ~ 2N strings of ~60 Latin-1 chars: object header + fields + byte[] ~ 110 bytes each,
            // plus a 4-8 byte array slot. Only pre-generate if that stays under half the heap.
            long estimate = 2 * n * 120L;
            long maxHeap = Runtime.getRuntime().maxMemory();
            pregen = n <= Integer.MAX_VALUE && estimate < maxHeap / 2;
            if (!pregen) {
                System.err.printf(Locale.ROOT,
                        "# NOTE: url keys generated on the fly inside timed loops (need ~%d MB, heap %d MB)%n",
                        estimate >> 20, maxHeap >> 20);
            }
        }

        warmUp(keyKind, fpp, threads, warmupSeconds, pregen);

        if (pregen) {
            long t0 = System.nanoTime();
            present = new PregeneratedUrlKeys(0, (int) n, threads);
            absent = new PregeneratedUrlKeys(n, (int) n, threads);
            System.err.printf(Locale.ROOT, "# url keys pre-generated in %.2fs%n", (System.nanoTime() - t0) / 1e9);
        } else {
            present = absent = onTheFly(keyKind);
        }

        // Each pass times the three phases on a fresh filter; the median of each phase over
        // the passes is reported (as the Rust harness does with --repeat), so that a 10^6 row,
        // 10-200 ms of work, is not one scheduling hiccup away from a different figure.
        long[][] nanos = new long[3][passes];
        long fp = 0;
        for (int pass = 0; pass < passes; pass++) {
            BloomFilter<Object> filter = newFilter(keyKind, n, fpp);
            System.gc();

            long t0 = System.nanoTime();
            runPhase(filter, Phase.PUT, present, 0, n, threads);
            long t1 = System.nanoTime();
            nanos[0][pass] = t1 - t0;

            t0 = System.nanoTime();
            long found = runPhase(filter, Phase.CONTAINS_PRESENT, present, 0, n, threads);
            t1 = System.nanoTime();
            nanos[1][pass] = t1 - t0;
            if (found != n) System.err.println("# ERROR: " + (n - found) + " false negatives");

            t0 = System.nanoTime();
            fp = runPhase(filter, Phase.CONTAINS_ABSENT, absent, n, n, threads);
            t1 = System.nanoTime();
            nanos[2][pass] = t1 - t0;
        }
        report(keyKind, n, threads, "put", n, median(nanos[0]), "-");
        report(keyKind, n, threads, "contains_present", n, median(nanos[1]), "-");
        report(keyKind, n, threads, "contains_absent", n, median(nanos[2]), Long.toString(fp));
    }
}
