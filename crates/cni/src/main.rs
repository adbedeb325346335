//! `nvo-cni`: the CNI plugin binary. Reads the configuration from standard input, prints the
//! result (exit 0) or the spec's error object (exit 1) on standard output.

use std::collections::HashMap;
use std::io::Read;
use std::process::ExitCode;

use nvo_cni::config::version_of;
use nvo_cni::error::{code, CniError};

const USAGE: &str =
    "nvo-cni: a CNI plugin (spec 1.0.0, 1.1.0) attaching containers to nvod's networks.
It is run by a container runtime, not by hand: CNI_COMMAND (ADD, DEL, CHECK, VERSION, STATUS, GC),
CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH in the environment, the network configuration
on standard input:
  {\"cniVersion\": \"1.0.0\", \"name\": \"red\", \"type\": \"nvo-cni\", \"vni\": 100,
   \"ipam\": {\"type\": \"host-local\", \"subnet\": \"10.0.0.0/24\"}}
Optional \"socket\": nvod's API socket (default: $NVO_SOCKET, then /run/nvo/nvod.sock).
Error codes and examples: docs/cni.md.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--version" || a == "-V") {
        println!("nvo-cni {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let vars: HashMap<String, String> = std::env::vars().collect();
    if !vars.contains_key("CNI_COMMAND") {
        // Not called by a runtime (perhaps by hand): answer at once instead of waiting on
        // standard input.
        let e = CniError::new(code::INVALID_ENV, "CNI_COMMAND: missing");
        println!("{}", e.to_json(&version_of(b"")));
        eprintln!(
            "nvo-cni: {e}

{USAGE}"
        );
        return ExitCode::FAILURE;
    }
    let mut stdin = Vec::new();
    let outcome = match std::io::stdin().read_to_end(&mut stdin) {
        Ok(_) => nvo_cni::run(&vars, &stdin),
        Err(e) => Err(CniError::new(
            code::IO_FAILURE,
            format!("reading standard input: {e}"),
        )),
    };
    match outcome {
        Ok(Some(answer)) => {
            println!("{answer}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            println!("{}", e.to_json(&version_of(&stdin)));
            eprintln!("nvo-cni: {e}");
            ExitCode::FAILURE
        }
    }
}
