//! The part of `nvo` that is checked on its own: the lab topology file's parser and the address
//! types it reads. The `nvo` binary (`main.rs`) uses these modules from here rather than
//! compiling its own copy, so nvo-fuzz-check fuzzes and replays the very parser `nvo lab up`
//! runs on a user's file.

pub mod addr;

/// `nvo lab`'s topology file; the rest of `nvo lab` (plan, up, down) lives in the binary.
pub mod lab {
    pub mod topology;
}
