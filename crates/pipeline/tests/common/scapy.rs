//! Committed scapy vectors stay what their script writes: the script is run again into a temp
//! file and the two compared. Needs /usr/bin/python3 with scapy (tools/setup installs it);
//! without it the check is skipped, with a line saying so.

use std::path::PathBuf;
use std::process::Command;

/// crates/pipeline/tests/vectors.
pub fn vector_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

/// Runs tests/vectors/`script` into a temp file and asserts it wrote exactly tests/vectors/`json`.
pub fn assert_script_writes(script: &str, json: &str) {
    let out = std::env::temp_dir().join(format!("nvo-{json}-{}", std::process::id()));
    let run = Command::new("/usr/bin/python3")
        .arg(vector_path().join(script))
        .arg(&out)
        .output();
    match run {
        Ok(run) if run.status.success() => {}
        Ok(run) if String::from_utf8_lossy(&run.stderr).contains("No module named 'scapy'") => {
            eprintln!("skipped: /usr/bin/python3 has no scapy");
            return;
        }
        Ok(run) => panic!("{script} failed: {}", String::from_utf8_lossy(&run.stderr)),
        Err(e) => {
            eprintln!("skipped: no /usr/bin/python3 ({e})");
            return;
        }
    }
    let fresh = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let committed = std::fs::read_to_string(vector_path().join(json)).unwrap();
    assert!(
        fresh == committed,
        "tests/vectors/{json} differs from what {script} writes now; regenerate it: \
         /usr/bin/python3 crates/pipeline/tests/vectors/{script} \
         crates/pipeline/tests/vectors/{json}"
    );
}
