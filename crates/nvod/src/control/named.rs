//! What the named profile kinds (ACL profiles, QoS profiles) share: their name rule, their
//! "not found" answer, and deletion, which a profile still attached somewhere refuses.

use super::{Control, Failure, Kind};
use crate::state::State;

/// A kind of named profile, as its messages name it.
pub(super) struct ProfileKind {
    /// What a profile is called in messages: `acl`, `qos profile`.
    pub what: &'static str,
    /// Where the profiles are listed: `/v1/acls`.
    pub list: &'static str,
    /// The CLI command that detaches one: `nvo acl detach`.
    pub detach: &'static str,
}

impl ProfileKind {
    /// A profile name: 1 to 32 letters, digits, `-`, `_` or `.` (it goes into URL paths).
    pub fn check_name(&self, name: &str) -> Result<(), Failure> {
        let ok = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if ok {
            Ok(())
        } else {
            Err(Failure::bad(format!(
                "{} name {name:?} is not allowed; use 1 to 32 letters, digits, '-', '_' or '.'",
                self.what
            )))
        }
    }

    /// The answer for a profile that does not exist.
    pub fn not_found(&self, name: &str) -> Failure {
        Failure::new(
            Kind::NotFound,
            format!("no {} {name:?}; GET {} lists them", self.what, self.list),
        )
    }
}

impl Control {
    /// Deletes profile `name` of `kind`: refused when it does not exist (`exists` false) or is
    /// attached to any of `users`; else `remove` takes it out of a copy of the state, which is
    /// recorded and becomes the state.
    pub(super) fn delete_named(
        &mut self,
        kind: &ProfileKind,
        name: &str,
        exists: bool,
        users: &[String],
        remove: impl FnOnce(&mut State),
    ) -> Result<(), Failure> {
        if !exists {
            return Err(kind.not_found(name));
        }
        if !users.is_empty() {
            return Err(Failure::new(
                Kind::Conflict,
                format!(
                    "{} {name} is attached to {}; detach it first ({})",
                    kind.what,
                    users.join(", "),
                    kind.detach
                ),
            ));
        }
        let mut new = self.state.clone();
        remove(&mut new);
        self.store.record(&self.state, &new)?;
        self.state = new;
        log::info!("{} {name} deleted", kind.what);
        Ok(())
    }
}
