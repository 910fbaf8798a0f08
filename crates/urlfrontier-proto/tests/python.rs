//! The `.proto` as another implementation reads it: Google's `protoc` (PyPI's `grpcio-tools`,
//! what url-frontier's Python clients are generated with) compiles it, and Python's protobuf
//! runtime encodes the same messages as the generated Rust types — byte for byte, both ways.
//! Skipped when `grpcio-tools` is missing, unless `REQUIRE_SERVICE_TEST_TOOLS` is set
//! (`scripts/test.sh` installs it and sets it).

use std::path::Path;
use std::process::Command;

use prost::Message;
use urlfrontier_proto::v2;

mod common;

/// Builds the messages of `common::samples` in Python, prints each
/// one's bytes in hex, then decodes the hex given on stdin (the Rust side's bytes) and
/// prints the fields it reads.
const SCRIPT: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import urlfrontier_pb2 as uf

get = uf.GetParams(max_urls_per_queue=10, max_queues=2, key="k", delay_requestable=30, crawlID="c")
anyc = uf.GetParams()
anyc.anyCrawlID.SetInParent()
item = uf.URLItem(known=uf.KnownURLItem(info=uf.URLInfo(url="u"), refetchable_from_date=5), ID="i")
ack = uf.AckMessage(ID="x", status=uf.AckMessage.FAIL)
batch = uf.BatchAck(ID="b", statuses=[uf.AckMessage.OK, uf.AckMessage.SKIPPED, uf.AckMessage.FAIL])
info = uf.URLInfo()
info.metadata["m"].values.append("v")
for m in (get, anyc, item, ack, batch, info):
    print(m.SerializeToString().hex())

read = uf.URLItem.FromString(bytes.fromhex(sys.stdin.readline().strip()))
print(read.WhichOneof("item"), read.discovered.info.url, read.discovered.info.key,
      read.discovered.info.crawlID, read.ID, read.creation_date,
      sorted(read.discovered.info.metadata["depth"].values))
"#;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn python_protobuf_encodes_and_reads_the_same_bytes() {
    let have = Command::new("python3")
        .args(["-c", "import grpc_tools.protoc"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var_os("REQUIRE_SERVICE_TEST_TOOLS").is_none(),
            "grpcio-tools is required (python3 -m pip install grpcio-tools)"
        );
        eprintln!("skipped: no grpcio-tools");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let protoc = Command::new("python3")
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(root.join("proto"))
        .arg(format!("--python_out={}", out.path().display()))
        .arg("urlfrontier.proto")
        .output()
        .unwrap();
    assert!(
        protoc.status.success(),
        "protoc refused the .proto: {}",
        String::from_utf8_lossy(&protoc.stderr)
    );

    // What Rust sends, for Python to read: a discovered URL with metadata and a crawl.
    let sent = v2::UrlItem {
        item: Some(v2::url_item::Item::Discovered(v2::DiscoveredUrlItem {
            info: Some(v2::UrlInfo {
                url: "http://h.test/p?q=é".into(),
                key: "h.test".into(),
                metadata: [(
                    "depth".to_owned(),
                    v2::StringList {
                        values: vec!["2".into(), "1".into()],
                    },
                )]
                .into(),
                crawl_id: "news".into(),
            }),
        })),
        id: "7".into(),
        creation_date: 1_795_000_000,
    };
    let mut python = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(out.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = python.stdin.take().unwrap();
        writeln!(stdin, "{}", hex(&sent.encode_to_vec())).unwrap();
    }
    let run = python.wait_with_output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();

    let ours: Vec<Vec<u8>> = common::samples()
        .into_iter()
        .map(|(ours, _)| ours)
        .collect();
    assert_eq!(lines.len(), ours.len() + 1, "{text}");
    for (python, rust) in lines.iter().zip(&ours) {
        assert_eq!(*python, hex(rust), "Python's bytes against Rust's");
    }
    assert_eq!(
        lines[ours.len()],
        "discovered http://h.test/p?q=é h.test news 7 1795000000 ['1', '2']",
        "what Python read of Rust's bytes"
    );
}
