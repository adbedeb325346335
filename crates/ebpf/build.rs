#![allow(clippy::expect_used, clippy::panic)] // a build script: failing loudly is its way to report
//! Compiles the eBPF programs (bpf/nvo.bpf.c) with clang into OUT_DIR/nvo.bpf.o, which the crate
//! embeds. Without clang the crate still builds, with an empty object: nvod then reports that
//! the kernel path was not built and `datapath = "auto"` runs the userspace path
//! (scripts/setup.sh installs clang, so CI and the demo always build it).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out.join("nvo.bpf.o");
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("bpf");
    for entry in std::fs::read_dir(&dir)
        .expect("crates/ebpf/bpf exists")
        .flatten()
    {
        println!("cargo:rerun-if-changed={}", entry.path().display());
    }
    println!("cargo:rerun-if-env-changed=NVO_CLANG");
    println!("cargo::rustc-check-cfg=cfg(nvo_bpf_missing)");
    let clang = env::var("NVO_CLANG").unwrap_or_else(|_| "clang".to_string());
    // The uapi headers include <asm/types.h>, which lives under the multiarch directory.
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    let status = Command::new(&clang)
        .args([
            "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
        ])
        .arg(format!("-I{multiarch}"))
        .arg(format!("-I{}", dir.display()))
        .arg("-c")
        .arg(dir.join("nvo.bpf.c"))
        .arg("-o")
        .arg(&object)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed to compile crates/ebpf/bpf/nvo.bpf.c ({s}); see above"),
        Err(e) => {
            println!(
                "cargo:warning=cannot run {clang} ({e}): the eBPF datapath is not built; run scripts/setup.sh"
            );
            println!("cargo:rustc-cfg=nvo_bpf_missing");
            std::fs::write(&object, []).expect("OUT_DIR is writable");
        }
    }
}
