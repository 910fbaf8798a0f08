// Generates Guava BloomFilter compatibility fixtures for the Rust `bloom` crate.
//
// Usage: java -cp <classes>:<guava.jar> GuavaFixtures <outdir>
// (normally invoked through gen-fixtures.sh next to this file).
//
// Everything is deterministic: keys come from fixed formulas or fixed-seed
// java.util.Random instances, and all collections preserve insertion order,
// so running the generator twice produces byte-identical files.
//
// Output files (all text files are UTF-8 with '\n' line endings):
//   sizing.tsv     n, p, optimalNumOfBits(n,p), optimalNumOfHashFunctions(n,bits), raw bits of p
//   NAME.bin       exact bytes of BloomFilter.writeTo(OutputStream)
//   NAME.keys      inserted keys, one per line, in insertion order
//   NAME.probes    "key\t1" / "key\t0" = mightContain(key) after all insertions
//   NAME.meta      key=value lines describing the filter
//   NAME.fp        (integer_100k only, instead of .keys/.probes) the absent probes for which
//                  mightContain answered true, one per line, in increasing order
// Key encoding: strings as-is; byte arrays as lowercase hex ("-" for the empty
// array); ints/longs in decimal.
//
// Package-private Guava members are reached through reflection.

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;

public final class GuavaFixtures {

    // ---------------------------------------------------------------- reflection

    private static final Method OPTIMAL_NUM_OF_BITS;
    private static final Method OPTIMAL_NUM_OF_HASH_FUNCTIONS;
    private static final Method CREATE_WITH_STRATEGY;
    private static final Method BIT_SIZE;
    private static final Field BITS_FIELD;
    private static final Field NUM_HASH_FUNCTIONS_FIELD;
    private static final Field STRATEGY_FIELD;
    private static final Method BIT_COUNT;
    private static final Object STRATEGY_MITZ_32;
    private static final Object STRATEGY_MITZ_64;

    static {
        try {
            Class<?> bf = BloomFilter.class;
            OPTIMAL_NUM_OF_BITS = bf.getDeclaredMethod("optimalNumOfBits", long.class, double.class);
            OPTIMAL_NUM_OF_HASH_FUNCTIONS =
                    bf.getDeclaredMethod("optimalNumOfHashFunctions", long.class, long.class);
            Class<?> strategyIface = Class.forName("com.google.common.hash.BloomFilter$Strategy");
            CREATE_WITH_STRATEGY =
                    bf.getDeclaredMethod("create", Funnel.class, long.class, double.class, strategyIface);
            BIT_SIZE = bf.getDeclaredMethod("bitSize");
            BITS_FIELD = bf.getDeclaredField("bits");
            NUM_HASH_FUNCTIONS_FIELD = bf.getDeclaredField("numHashFunctions");
            STRATEGY_FIELD = bf.getDeclaredField("strategy");
            Class<?> bitArray =
                    Class.forName("com.google.common.hash.BloomFilterStrategies$LockFreeBitArray");
            BIT_COUNT = bitArray.getDeclaredMethod("bitCount");
            for (java.lang.reflect.AccessibleObject o : new java.lang.reflect.AccessibleObject[] {
                    OPTIMAL_NUM_OF_BITS, OPTIMAL_NUM_OF_HASH_FUNCTIONS, CREATE_WITH_STRATEGY, BIT_SIZE,
                    BITS_FIELD, NUM_HASH_FUNCTIONS_FIELD, STRATEGY_FIELD, BIT_COUNT}) {
                o.setAccessible(true);
            }
            Class<?> strategies = Class.forName("com.google.common.hash.BloomFilterStrategies");
            Object mitz32 = null;
            Object mitz64 = null;
            for (Object c : strategies.getEnumConstants()) {
                String name = ((Enum<?>) c).name();
                if (name.equals("MURMUR128_MITZ_32")) mitz32 = c;
                if (name.equals("MURMUR128_MITZ_64")) mitz64 = c;
            }
            if (mitz32 == null || mitz64 == null) {
                throw new IllegalStateException("BloomFilterStrategies constants not found");
            }
            STRATEGY_MITZ_32 = mitz32;
            STRATEGY_MITZ_64 = mitz64;
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Object invoke(Method m, Object target, Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) throw (RuntimeException) cause;
            if (cause instanceof Error) throw (Error) cause;
            throw new RuntimeException(cause);
        } catch (IllegalAccessException e) {
            throw new RuntimeException(e);
        }
    }

    private static Object get(Field f, Object target) {
        try {
            return f.get(target);
        } catch (IllegalAccessException e) {
            throw new RuntimeException(e);
        }
    }

    static long optimalNumOfBits(long n, double p) {
        return (Long) invoke(OPTIMAL_NUM_OF_BITS, null, n, p);
    }

    static int optimalNumOfHashFunctions(long n, long m) {
        return (Integer) invoke(OPTIMAL_NUM_OF_HASH_FUNCTIONS, null, n, m);
    }

    @SuppressWarnings("unchecked")
    static <T> BloomFilter<T> createWithStrategy(Funnel<? super T> funnel, long n, double p, Object strategy) {
        return (BloomFilter<T>) invoke(CREATE_WITH_STRATEGY, null, funnel, n, p, strategy);
    }

    static long bitSize(BloomFilter<?> f) {
        return (Long) invoke(BIT_SIZE, f);
    }

    static long bitCount(BloomFilter<?> f) {
        return (Long) invoke(BIT_COUNT, get(BITS_FIELD, f));
    }

    static int numHashFunctions(BloomFilter<?> f) {
        return (Integer) get(NUM_HASH_FUNCTIONS_FIELD, f);
    }

    static String strategyName(BloomFilter<?> f) {
        return ((Enum<?>) get(STRATEGY_FIELD, f)).name();
    }

    // ---------------------------------------------------------------- output helpers

    private final Path outDir;

    private GuavaFixtures(Path outDir) {
        this.outDir = outDir;
    }

    private void writeText(String fileName, CharSequence content) throws IOException {
        Files.write(outDir.resolve(fileName), content.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static String hexBits(double d) {
        return Long.toHexString(Double.doubleToRawLongBits(d));
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    static String encodeBytes(byte[] b) {
        if (b.length == 0) return "-";
        char[] out = new char[b.length * 2];
        for (int i = 0; i < b.length; i++) {
            out[2 * i] = HEX[(b[i] >> 4) & 0xf];
            out[2 * i + 1] = HEX[b[i] & 0xf];
        }
        return new String(out);
    }

    private static void checkEncodedKey(String s) {
        if (s.isEmpty() || s.indexOf('\t') >= 0 || s.indexOf('\n') >= 0 || s.indexOf('\r') >= 0) {
            throw new IllegalStateException("key not representable in fixture: [" + s + "]");
        }
    }

    // ---------------------------------------------------------------- key generators

    private static final String[] NON_ASCII_TEMPLATES = {
        "https://中文网页%d.example.cn/新闻/%d",
        "https://café.example.fr/résumé/%d?é=ü&n=%d",
        "https://emoji.example.com/😀/%d?x=🎉😀&y=%d",
        "https://例え.テスト/ñandú/𝄞%d/Ω%d",
        "https://mixed.example.com/a/%d/Привет-مرحبا-שלום-😀-é-%d",
    };

    /** URL-like key; every 20th index (i % 20 == 7) is a non-ASCII variant. */
    static String urlKey(long i) {
        if (Math.floorMod(i, 20) == 7) {
            String t = NON_ASCII_TEMPLATES[(int) Math.floorMod(i / 20, (long) NON_ASCII_TEMPLATES.length)];
            return String.format(java.util.Locale.ROOT, t, i, i * 3);
        }
        return "https://host" + Math.floorMod(i, 37) + ".example.com/a/" + i + "?q=" + (i * 7);
    }

    static List<String> urlKeys(long from, long count) {
        List<String> out = new ArrayList<>();
        for (long i = from; i < from + count; i++) out.add(urlKey(i));
        return out;
    }

    /** Adds values from the supplier until the set reaches size target, skipping excluded ones. */
    static <T> void fill(Set<T> set, int target, java.util.function.Supplier<T> gen, Set<?> exclude) {
        while (set.size() < target) {
            T v = gen.get();
            if (!exclude.contains(v)) set.add(v);
        }
    }

    // ---------------------------------------------------------------- cases

    /** Holds a key list and a way to turn keys into strings for the files. */
    private static final class Result<T> {
        final BloomFilter<T> filter;
        final int putTrue;

        Result(BloomFilter<T> filter, int putTrue) {
            this.filter = filter;
            this.putTrue = putTrue;
        }
    }

    private <T> Result<T> writeCase(String name, String funnelName, BloomFilter<T> filter,
            long expectedInsertions, double fpp, List<T> keys, List<T> absent,
            Function<T, String> encode) throws IOException {
        int putTrue = 0;
        StringBuilder keysOut = new StringBuilder();
        for (T k : keys) {
            if (filter.put(k)) putTrue++;
            String e = encode.apply(k);
            checkEncodedKey(e);
            keysOut.append(e).append('\n');
        }
        writeText(name + ".keys", keysOut);
        writeFilterFiles(name, funnelName, filter, expectedInsertions, fpp, keys, true, absent, false, encode,
                Integer.toString(putTrue), null);
        return new Result<>(filter, putTrue);
    }

    /**
     * Writes NAME.bin and NAME.meta, plus either NAME.probes (fpOnly false) or NAME.fp (fpOnly true:
     * only the absent probes that mightContain accepted, in the order of {@code absent}).
     */
    private <T> void writeFilterFiles(String name, String funnelName, BloomFilter<T> filter,
            long expectedInsertions, double fpp, List<T> inserted, boolean probeInserted, List<T> absent,
            boolean fpOnly, Function<T, String> encode, String putTrue, String extraMeta) throws IOException {
        // Sanity checks on the encoded form (works for byte[] too): inserted keys are unique,
        // absent probes are unique and really were not inserted.
        Set<String> insertedSet = new LinkedHashSet<>();
        for (T k : inserted) {
            if (!insertedSet.add(encode.apply(k))) throw new IllegalStateException(name + ": duplicate key");
        }
        Set<String> absentSet = new LinkedHashSet<>();
        for (T k : absent) {
            String e = encode.apply(k);
            if (insertedSet.contains(e) || !absentSet.add(e)) {
                throw new IllegalStateException(name + ": bad absent probe " + e);
            }
        }

        StringBuilder probes = new StringBuilder();
        StringBuilder fpList = new StringBuilder();
        int falsePositives = 0;
        for (T k : probeInserted ? inserted : java.util.Collections.<T>emptyList()) {
            boolean c = filter.mightContain(k);
            if (!c) throw new IllegalStateException(name + ": false negative?!");
            probes.append(encode.apply(k)).append('\t').append(c ? '1' : '0').append('\n');
        }
        for (T k : absent) {
            boolean c = filter.mightContain(k);
            String e = encode.apply(k);
            checkEncodedKey(e);
            if (c) {
                falsePositives++;
                fpList.append(e).append('\n');
            }
            probes.append(e).append('\t').append(c ? '1' : '0').append('\n');
        }
        if (fpOnly) {
            writeText(name + ".fp", fpList);
        } else {
            writeText(name + ".probes", probes);
        }

        ByteArrayOutputStream bin = new ByteArrayOutputStream();
        filter.writeTo(bin);
        Files.write(outDir.resolve(name + ".bin"), bin.toByteArray());

        StringBuilder meta = new StringBuilder();
        meta.append("funnel=").append(funnelName).append('\n');
        meta.append("strategy=").append(strategyName(filter)).append('\n');
        meta.append("expected_insertions=").append(expectedInsertions).append('\n');
        meta.append("fpp_bits=").append(hexBits(fpp)).append('\n');
        meta.append("inserted=").append(inserted.size()).append('\n');
        if (putTrue != null) meta.append("put_true=").append(putTrue).append('\n');
        meta.append("bit_size=").append(bitSize(filter)).append('\n');
        meta.append("hashes=").append(numHashFunctions(filter)).append('\n');
        meta.append("bit_count=").append(bitCount(filter)).append('\n');
        String approx;
        try {
            approx = Long.toString(filter.approximateElementCount());
        } catch (ArithmeticException e) {
            // Guava 31.1 throws when every bit is set (-log1p(-1) is infinite).
            approx = "ERR";
        }
        meta.append("approximate_element_count=").append(approx).append('\n');
        meta.append("expected_fpp_bits=").append(hexBits(filter.expectedFpp())).append('\n');
        meta.append("false_positives=").append(falsePositives).append('\n');
        if (extraMeta != null) meta.append(extraMeta);
        writeText(name + ".meta", meta);
    }

    // ---------------------------------------------------------------- sizing

    static final long[] SIZING_N = {
        0L, 1L, 2L, 10L, 100L, 1000L, 12345L, 1000000L, 10000000L, 100000000L, 1000000000L,
        10000000000L, 300000000000L,
    };
    static final double[] SIZING_P = {
        0.0, Double.MIN_VALUE, 1e-15, 1e-9, 1e-6, 0.001, 0.01, 0.03, 0.1, 0.3, 0.5, 0.9, 0.999999,
    };

    private void writeSizing() throws IOException {
        StringBuilder sb = new StringBuilder("n\tp\tbits\thashes\tp_bits\n");
        for (long n : SIZING_N) {
            for (double p : SIZING_P) {
                String bits;
                String hashes;
                try {
                    long m = optimalNumOfBits(n, p);
                    int k = optimalNumOfHashFunctions(n, m);
                    bits = Long.toString(m);
                    hashes = Integer.toString(k);
                } catch (RuntimeException e) {
                    bits = "ERR";
                    hashes = "ERR";
                }
                sb.append(n).append('\t').append(Double.toString(p)).append('\t').append(bits)
                        .append('\t').append(hashes).append('\t').append(hexBits(p)).append('\n');
            }
        }
        writeText("sizing.tsv", sb);
    }

    // ---------------------------------------------------------------- main

    private static final Funnel<CharSequence> UTF8 = Funnels.stringFunnel(StandardCharsets.UTF_8);
    private static final Function<String, String> STR = s -> s;
    private static final Function<Integer, String> INT = i -> Integer.toString(i);
    private static final Function<Long, String> LONG = l -> Long.toString(l);

    private void run() throws IOException {
        Files.createDirectories(outDir);
        writeSizing();

        // string_utf8: 1000 URL-ish keys (50 non-ASCII), 1000 absent of the same shape.
        writeCase("string_utf8", "string_utf8", BloomFilter.create(UTF8, 1000L, 0.01), 1000L, 0.01,
                urlKeys(0, 1000), urlKeys(1_000_000, 1000), STR);

        // string_utf8_overfull: n=100, p=0.3, 1000 inserted.
        writeCase("string_utf8_overfull", "string_utf8", BloomFilter.create(UTF8, 100L, 0.3), 100L, 0.3,
                urlKeys(5000, 1000), urlKeys(2_000_000, 1000), STR);

        // string_utf8_overfull_300: same sizing but only 300 keys, so the filter is heavily
        // loaded (many false positives) without being saturated like the case above.
        writeCase("string_utf8_overfull_300", "string_utf8", BloomFilter.create(UTF8, 100L, 0.3), 100L, 0.3,
                urlKeys(40_000, 300), urlKeys(2_500_000, 1000), STR);

        // unencoded_chars: UTF-16 code units, same key shapes (emoji => surrogate pairs).
        Funnel<CharSequence> chars = Funnels.unencodedCharsFunnel();
        writeCase("unencoded_chars", "unencoded_chars", BloomFilter.create(chars, 1000L, 0.03), 1000L, 0.03,
                urlKeys(10_000, 1000), urlKeys(3_000_000, 1000), STR);

        // bytes: 500 random arrays of length 0..64 (empty exactly once), 1000 absent.
        {
            Random rnd = new Random(0x0B10F11L);
            Set<String> seen = new LinkedHashSet<>();
            List<byte[]> ins = new ArrayList<>();
            ins.add(new byte[0]);
            seen.add("-");
            while (ins.size() < 500) {
                byte[] b = new byte[1 + rnd.nextInt(64)];
                rnd.nextBytes(b);
                if (seen.add(encodeBytes(b))) ins.add(b);
            }
            List<byte[]> abs = new ArrayList<>();
            while (abs.size() < 1000) {
                byte[] b = new byte[1 + rnd.nextInt(64)];
                rnd.nextBytes(b);
                if (seen.add(encodeBytes(b))) abs.add(b);
            }
            Function<byte[], String> hex = GuavaFixtures::encodeBytes;
            writeCase("bytes", "byte_array", BloomFilter.create(Funnels.byteArrayFunnel(), 500L, 0.01),
                    500L, 0.01, ins, abs, hex);
        }

        // integer: 10000 ints mixing small, negative, extremes and random; 5000 absent.
        {
            Random rnd = new Random(0x1A7E6E2L);
            Set<Integer> ins = new LinkedHashSet<>();
            for (int i = 0; i < 5000; i++) ins.add(i);
            for (int i = 1; i <= 2500; i++) ins.add(-i);
            ins.add(Integer.MIN_VALUE);
            ins.add(Integer.MAX_VALUE);
            ins.add(Integer.MIN_VALUE + 1);
            ins.add(Integer.MAX_VALUE - 1);
            fill(ins, 10000, rnd::nextInt, java.util.Collections.emptySet());
            Set<Integer> abs = new LinkedHashSet<>();
            for (int i = 5000; i < 7500; i++) abs.add(i);
            for (int i = 2501; i <= 3750; i++) abs.add(-i);
            fill(abs, 5000, rnd::nextInt, ins);
            writeCase("integer", "integer", BloomFilter.create(Funnels.integerFunnel(), 10000L, 0.01),
                    10000L, 0.01, new ArrayList<>(ins), new ArrayList<>(abs), INT);
        }

        // long: 10000 longs mixing small, negative, extremes, large and random; 5000 absent.
        {
            Random rnd = new Random(0x10E6L);
            Set<Long> ins = new LinkedHashSet<>();
            for (long i = 0; i < 3000; i++) ins.add(i);
            for (long i = 1; i <= 2000; i++) ins.add(-i);
            ins.add(Long.MIN_VALUE);
            ins.add(Long.MAX_VALUE);
            ins.add(Long.MIN_VALUE + 1);
            ins.add(Long.MAX_VALUE - 1);
            ins.add((long) Integer.MAX_VALUE + 1);
            ins.add((long) Integer.MIN_VALUE - 1);
            for (long i = 0; i < 2000; i++) ins.add((1L << 32) + i * 1_000_003L);
            fill(ins, 10000, rnd::nextLong, java.util.Collections.emptySet());
            Set<Long> abs = new LinkedHashSet<>();
            for (long i = 3000; i < 5000; i++) abs.add(i);
            for (long i = 2001; i <= 3000; i++) abs.add(-i);
            for (long i = 0; i < 500; i++) abs.add((1L << 40) + i * 999_983L);
            fill(abs, 5000, rnd::nextLong, ins);
            writeCase("long", "long", BloomFilter.create(Funnels.longFunnel(), 10000L, 0.001),
                    10000L, 0.001, new ArrayList<>(ins), new ArrayList<>(abs), LONG);
        }

        // integer_100k: 0..99999 inserted, 100000..199999 probed (all absent); writes .bin, .meta
        // and .fp (the probes Guava accepted, increasing) instead of .keys/.probes.
        {
            List<Integer> ins = new ArrayList<>();
            for (int i = 0; i < 100_000; i++) ins.add(i);
            List<Integer> abs = new ArrayList<>();
            for (int i = 100_000; i < 200_000; i++) abs.add(i);
            BloomFilter<Integer> f = BloomFilter.create(Funnels.integerFunnel(), 100_000L, 0.01);
            int putTrue = 0;
            for (Integer k : ins) {
                if (f.put(k)) putTrue++;
            }
            // No .keys/.probes for this case (the keys are implied by the ranges above); only the
            // absent range is probed and just its false positives are written, to integer_100k.fp.
            writeFilterFiles("integer_100k", "integer", f, 100_000L, 0.01, ins, false, abs, true, INT,
                    Integer.toString(putTrue), null);
        }

        // mitz32_string: legacy MURMUR128_MITZ_32 strategy via the package-private create.
        writeCase("mitz32_string", "string_utf8",
                GuavaFixtures.<String>createWithStrategy(UTF8, 1000L, 0.01, STRATEGY_MITZ_32),
                1000L, 0.01, urlKeys(20_000, 1000), urlKeys(4_000_000, 1000), STR);

        // mitz32_long
        {
            Random rnd = new Random(0x32L);
            Set<Long> ins = new LinkedHashSet<>();
            for (long i = -1000; i < 2000; i++) ins.add(i);
            ins.add(Long.MIN_VALUE);
            ins.add(Long.MAX_VALUE);
            fill(ins, 5000, rnd::nextLong, java.util.Collections.emptySet());
            Set<Long> abs = new LinkedHashSet<>();
            for (long i = 2000; i < 2900; i++) abs.add(i);
            fill(abs, 1500, rnd::nextLong, ins);
            writeCase("mitz32_long", "long",
                    GuavaFixtures.<Long>createWithStrategy(Funnels.longFunnel(), 5000L, 0.02, STRATEGY_MITZ_32),
                    5000L, 0.02, new ArrayList<>(ins), new ArrayList<>(abs), LONG);
        }

        // putall: a = keys [0,1500), b = keys [1000,2500) => 500 shared.
        {
            List<String> aKeys = urlKeys(100_000, 1500);
            List<String> bKeys = urlKeys(101_000, 1500);
            Result<CharSequence> a = writeCaseCs("putall_a", BloomFilter.create(UTF8, 2000L, 0.01), 2000L, 0.01,
                    aKeys, urlKeys(5_000_000, 100));
            Result<CharSequence> b = writeCaseCs("putall_b", BloomFilter.create(UTF8, 2000L, 0.01), 2000L, 0.01,
                    bKeys, urlKeys(6_000_000, 100));
            BloomFilter<CharSequence> merged = a.filter.copy();
            merged.putAll(b.filter);
            List<String> union = urlKeys(100_000, 2500);
            StringBuilder keysOut = new StringBuilder();
            for (String k : union) keysOut.append(k).append('\n');
            writeText("putall_merged.keys", keysOut);
            writeFilterFiles("putall_merged", "string_utf8", cs(merged), 2000L, 0.01, union, true,
                    urlKeys(7_000_000, 100), false, STR, null, "merged_from=putall_a,putall_b\n");
        }

        // empty: n=0 (Guava bumps it to 1), p=0.5, nothing inserted.
        writeCase("empty", "string_utf8", BloomFilter.create(UTF8, 0L, 0.5), 0L, 0.5,
                new ArrayList<String>(), urlKeys(8_000_000, 100), STR);

        // fpp_tiny: many hash functions.
        writeCase("fpp_tiny", "string_utf8", BloomFilter.create(UTF8, 100L, 1e-12), 100L, 1e-12,
                urlKeys(30_000, 100), urlKeys(9_000_000, 1000), STR);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static BloomFilter<String> cs(BloomFilter<CharSequence> f) {
        return (BloomFilter) f;
    }

    private Result<CharSequence> writeCaseCs(String name, BloomFilter<CharSequence> filter, long n, double p,
            List<String> keys, List<String> absent) throws IOException {
        Result<String> r = writeCase(name, "string_utf8", cs(filter), n, p, keys, absent, STR);
        return new Result<>(filter, r.putTrue);
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: GuavaFixtures <outdir>");
            System.exit(2);
        }
        new GuavaFixtures(Paths.get(args[0])).run();
    }
}
