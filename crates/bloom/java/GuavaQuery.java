// Reads a Bloom filter file with Guava's BloomFilter.readFrom (string funnel, UTF-8) and
// prints, for each key line on standard input, 1 if mightContain says true and 0 otherwise.
// Used by scripts/test.sh to prove that a Java service reads what `crawler bloom build` wrote.
//
// Usage: java -cp <classes>:<guava.jar> GuavaQuery FILE < keys

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;

public final class GuavaQuery {
    public static void main(String[] args) throws Exception {
        BloomFilter<CharSequence> filter;
        try (InputStream in = new BufferedInputStream(new FileInputStream(args[0]))) {
            filter = BloomFilter.readFrom(in, Funnels.stringFunnel(StandardCharsets.UTF_8));
        }
        BufferedReader keys =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out =
                new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (String key; (key = keys.readLine()) != null; ) {
            out.write(filter.mightContain(key) ? "1\n" : "0\n");
        }
        out.flush();
    }
}
