//! `crawler bloom build | query | info` against filters written by the real Guava.

use crate::util::{fixture, run, stderr};

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Builds a filter shaped like Guava's `string_utf8` fixture from the keys of `input` (extra
/// arguments) or `stdin`, and asserts the file is byte for byte the one Guava wrote.
fn assert_builds_guavas_file(input: &[&str], stdin: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("urls.bloom");
    let mut args = vec![
        "bloom",
        "build",
        "--expected",
        "1000",
        "--fpp",
        "0.01",
        "--out",
        path(&out),
    ];
    args.extend_from_slice(input);
    let output = run(&args, stdin);
    assert!(output.status.success(), "{}", stderr(&output));
    let guava = std::fs::read(fixture("string_utf8.bin")).unwrap();
    assert!(
        std::fs::read(&out).unwrap() == guava,
        "built file differs from Guava's"
    );
}

#[test]
fn build_writes_the_bytes_guava_writes() {
    let keys = fixture("string_utf8.keys");
    assert_builds_guavas_file(&["--input", path(&keys)], b"");
    assert_builds_guavas_file(&["--input", path(&keys), "--per-key"], b"");
}

/// Keys arrive in batches of 1024: three passes over Guava's 1000 keys straddle batch ends,
/// and repeating a key changes no bit, so the file must still be Guava's.
#[test]
fn build_over_several_batches_writes_the_bytes_guava_writes() {
    let keys = std::fs::read_to_string(fixture("string_utf8.keys")).unwrap();
    assert_builds_guavas_file(&[], keys.repeat(3).as_bytes());
}

/// A bad line ends a query with exit code 65, after the answers for every key before it
/// (even though those keys wait for a batch to fill).
#[test]
fn query_answers_the_keys_before_a_bad_line() {
    let mut stdin = "https://a.example/\n".repeat(1500).into_bytes();
    stdin.extend_from_slice(b"\xff\n");
    stdin.extend_from_slice(b"https://b.example/\n");
    let output = run(
        &["bloom", "query", path(&fixture("string_utf8.bin"))],
        &stdin,
    );
    assert_eq!(output.status.code(), Some(65));
    assert!(stderr(&output).contains("line 1501"), "{}", stderr(&output));
    let answers = String::from_utf8(output.stdout).unwrap();
    assert_eq!(answers.lines().count(), 1500);
    assert!(answers.lines().all(|l| l == "0" || l == "1"));
}

#[test]
fn build_reads_keys_from_stdin_and_handles_crlf() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.bloom");
    let output = run(
        &[
            "bloom",
            "build",
            "--expected",
            "10",
            "--fpp",
            "0.01",
            "--out",
            path(&out),
        ],
        b"alpha\r\nbeta\n\ngamma",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = run(
        &["bloom", "query", path(&out)],
        b"alpha\nbeta\ngamma\n\ndelta\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    // The empty line was a key too; "delta" was not put (and is not a false positive here).
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "1\n1\n1\n1\n0\n");
}

#[test]
fn query_answers_every_probe_as_guava_did() {
    let probes = std::fs::read_to_string(fixture("string_utf8.probes")).unwrap();
    let (keys, answers): (Vec<&str>, Vec<&str>) =
        probes.lines().map(|l| l.rsplit_once('\t').unwrap()).unzip();
    let stdin = keys.join("\n") + "\n";
    let filter = fixture("string_utf8.bin");
    for extra in [None, Some("--per-key")] {
        let mut args = vec!["bloom", "query", path(&filter)];
        args.extend(extra);
        let output = run(&args, stdin.as_bytes());
        assert!(output.status.success(), "{}", stderr(&output));
        let ours: Vec<String> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(ours, answers, "{extra:?}");
    }
}

#[test]
fn info_reports_guava_statistics() {
    let output = run(&["bloom", "info", path(&fixture("string_utf8.bin"))], b"");
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    for line in [
        "strategy: MURMUR128_MITZ_64",
        "bit_size: 9600",
        "hash_functions: 7",
        "bit_count: 4957",
        "approximate_element_count: 996",
        "file_bytes: 1206",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    let fpp: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("expected_fpp: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((fpp - 0.009786644234247558).abs() < 1e-15);
}

#[test]
fn bad_files_give_one_line_and_exit_65() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 4] = [
        ("empty", b""),
        ("garbage", b"<html>not a filter</html>"),
        // A header promising 2^31-1 words followed by almost nothing.
        ("truncated", &[1, 7, 0x7f, 0xff, 0xff, 0xff, 0, 0]),
        ("trailing", &[1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 42]),
    ];
    for (name, bytes) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        for cmd in ["info", "query"] {
            let output = run(&["bloom", cmd, path(&file)], b"key\n");
            assert_eq!(output.status.code(), Some(65), "{cmd} {name}");
            let err = stderr(&output);
            assert_eq!(err.lines().count(), 1, "{cmd} {name}: {err}");
            assert!(err.contains("is not a Guava Bloom filter"), "{err}");
        }
    }
}

#[test]
fn missing_files_and_bad_arguments_have_their_own_codes() {
    let output = run(&["bloom", "info", "/nonexistent/filter.bloom"], b"");
    assert_eq!(output.status.code(), Some(66));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f");
    let output = run(
        &[
            "bloom",
            "build",
            "--expected",
            "10",
            "--fpp",
            "1.5",
            "--out",
            path(&out),
        ],
        b"",
    );
    assert_eq!(output.status.code(), Some(64));
    assert!(stderr(&output).contains("false-positive probability"));
    assert!(!out.exists());
    let output = run(&["bloom", "build", "--fpp", "0.1"], b"");
    assert_eq!(output.status.code(), Some(64), "missing required flags");
    let output = run(&["bloom", "frobnicate"], b"");
    assert_eq!(output.status.code(), Some(64));
}

#[test]
fn invalid_utf8_key_is_a_data_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f");
    let output = run(
        &[
            "bloom",
            "build",
            "--expected",
            "10",
            "--fpp",
            "0.1",
            "--out",
            path(&out),
        ],
        b"ok\n\xff\xfe\n",
    );
    assert_eq!(output.status.code(), Some(65));
    assert!(stderr(&output).contains("line 2"), "{}", stderr(&output));
    assert!(!out.exists(), "no file written on failure");
}

#[test]
fn help_and_version_succeed() {
    let output = run(&["--version"], b"");
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("crawler "));
    let output = run(&["bloom", "--help"], b"");
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for sub in ["build", "query", "info"] {
        assert!(help.contains(sub));
    }
}
