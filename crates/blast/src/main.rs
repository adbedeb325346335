//! `nvo-blast`: see the crate docs (`lib.rs`) and `nvo-blast --help`. Prints one line of text,
//! or one JSON object with `--json`, on stdout. Exit status: 0 after a run, 1 when a socket
//! could not be opened or (recv) nothing arrived, 2 for a usage error.

use std::process::ExitCode;

use clap::Parser;

use nvo_blast::cli::{Cli, Command};
use nvo_blast::recv::End;
use nvo_blast::{recv, send};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (text, json, ok) = match &cli.command {
        Command::Send(args) => match send::run(args) {
            Ok(r) => (r.to_string(), serde_json::to_string(&r), true),
            Err(e) => return fail(&e),
        },
        Command::Recv(args) => match recv::run(args) {
            Ok(r) => {
                let ok = r.end != End::NothingArrived;
                (r.to_string(), serde_json::to_string(&r), ok)
            }
            Err(e) => return fail(&e),
        },
    };
    let wants_json = match &cli.command {
        Command::Send(a) => a.json,
        Command::Recv(a) => a.json,
    };
    match json {
        Ok(j) if wants_json => println!("{j}"),
        _ => println!("{text}"),
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("nvo-blast: no datagram arrived: is the sender running, and routed here?");
        ExitCode::FAILURE
    }
}

fn fail(e: &dyn std::error::Error) -> ExitCode {
    eprintln!("nvo-blast: {e}");
    ExitCode::FAILURE
}
