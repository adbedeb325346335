//! Replays every committed fuzz corpus of nvo-fuzz-check's targets (fuzz/corpus/TARGET/*)
//! through its check, so that CI re-checks on stable Rust what the fuzzer found interesting.

use std::path::Path;

use nvo_fuzz_check::CHECKS;

#[test]
fn every_corpus_replays_clean() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    for (name, check) in CHECKS {
        let dir = root.join("fuzz/corpus").join(name);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut n = 0;
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| check(&data));
            assert!(
                result.is_ok(),
                "{name}: corpus input {} fails its check",
                path.display()
            );
            n += 1;
        }
        assert!(n > 0, "{name}: empty corpus; run scripts/fuzz.sh");
    }
}
