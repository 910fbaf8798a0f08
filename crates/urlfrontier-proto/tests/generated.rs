//! The committed generated code is what the `.proto` generates today: regenerated here with
//! `protox` (the `.proto` compiled in pure Rust) and `tonic-prost-build`, compared byte for
//! byte. `UPDATE_GENERATED=1` writes the fresh code over the committed file instead.

use std::path::Path;

#[test]
fn the_committed_code_is_what_the_proto_generates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fds = protox::compile(["urlfrontier.proto"], [root.join("proto")]).expect("the .proto");
    let out = tempfile::tempdir().unwrap();
    tonic_prost_build::configure()
        .build_transport(false)
        .out_dir(out.path())
        .compile_fds(fds)
        .expect("code generation");
    let fresh = std::fs::read_to_string(out.path().join("urlfrontier.rs")).unwrap();
    let committed = root.join("src/generated/urlfrontier.rs");
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::create_dir_all(committed.parent().unwrap()).unwrap();
        std::fs::write(&committed, &fresh).unwrap();
    }
    let kept = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        kept == fresh,
        "src/generated/urlfrontier.rs is not what proto/urlfrontier.proto generates: \
         UPDATE_GENERATED=1 cargo test -p urlfrontier-proto --test generated"
    );
}
