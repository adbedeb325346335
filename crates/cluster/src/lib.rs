//! nvo's cluster store client (issue 19): cluster-wide desired state lives in etcd, and every
//! nvod converges its own tables to it.
//!
//! - [`checks`]: the settings' checks that need no etcd (endpoints, host name, lease TTL).
//! - [`keys`]: the key layout under the prefix (`networks/<VNI>`, `hosts/<name>`).
//! - [`object`]: parsing and validating the objects — the one check that `nvo --etcd` runs
//!   before writing and nvod runs on what it reads.
//! - [`desired`]: the pure part — objects + registered hosts → desired networks, and desired
//!   vs applied → operations. No I/O, unit-tested without etcd.
//! - [`profiles`]: the same for encapsulation profiles, in two phases around the networks
//!   (created before the networks that use them, deleted after).
//! - [`overlay`]: overlay nodes and routes: parsing, and the diff of keyed entries.
//! - [`session`]: the etcd side — connect with backoff, register this host under a lease kept
//!   alive at TTL/3, read the prefix at a revision, watch from revision+1, and on any error
//!   reconnect and read again. It hands whole snapshots to its caller.
//! - [`store`]: the few writes and reads `nvo --etcd` makes.

pub mod checks;
pub mod desired;
pub mod keys;
pub mod object;
pub mod overlay;
pub mod profiles;
pub mod session;
pub mod store;

pub use checks::{check_endpoint, check_host_name, DEFAULT_LEASE_TTL_S, LEASE_TTL_S};
pub use desired::{desired, diff, Applied, Desired, Op};
pub use keys::{Key, Layout, DEFAULT_PREFIX};
pub use object::{
    parse_host, parse_network, parse_profile, validate_network, validate_profile, HostRecord,
    ObjectError,
};
pub use overlay::{keyed_diff, KeyedOp};
pub use profiles::{profile_diff, Phase, ProfileOp};
pub use session::{Access, Link, Outputs, Settings, Snapshot, Tls};
pub use store::StoreError;
