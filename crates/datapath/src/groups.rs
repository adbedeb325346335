//! The underlay multicast groups this node has joined, with the number of networks using each.
//!
//! A network in multicast BUM mode floods to its group and must also hear it: the first network
//! using a group joins it on the underlay ([`nvo_io::UdpUnderlay::join`], one receive socket per
//! group), the last one removed leaves it. Several networks may share a group (the VNI tells
//! their frames apart), so the number of groups stays small; nvo-io bounds it at
//! [`nvo_io::MAX_GROUPS`].

use std::collections::BTreeMap;
use std::net::IpAddr;

use nvo_io::{UdpUnderlay, MAX_GROUPS};

use crate::command::DatapathError;

/// Joined groups and their users.
#[derive(Debug, Default)]
pub struct Groups {
    users: BTreeMap<IpAddr, usize>,
    /// Bumped on every join and leave: the group sockets to poll changed.
    generation: u64,
}

impl Groups {
    /// One more network uses `group`; joins it if it is the first.
    pub fn add(&mut self, underlay: &mut UdpUnderlay, group: IpAddr) -> Result<(), DatapathError> {
        if let Some(n) = self.users.get_mut(&group) {
            *n += 1;
            return Ok(());
        }
        if self.users.len() >= MAX_GROUPS {
            return Err(DatapathError::TooManyGroups {
                group,
                max: MAX_GROUPS,
            });
        }
        underlay
            .join(group)
            .map_err(|source| DatapathError::Join { group, source })?;
        self.users.insert(group, 1);
        self.generation += 1;
        log::info!("joined underlay multicast group {group}");
        Ok(())
    }

    /// One network fewer uses `group`; leaves it after the last.
    pub fn remove(&mut self, underlay: &mut UdpUnderlay, group: IpAddr) {
        let Some(n) = self.users.get_mut(&group) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        self.users.remove(&group);
        self.generation += 1;
        // Leaving closes the group's socket; it cannot fail for a group that was joined.
        if let Err(e) = underlay.leave(group) {
            log::warn!("leaving underlay multicast group {group}: {e}");
        } else {
            log::info!("left underlay multicast group {group}");
        }
    }

    /// Changes whenever a group is joined or left.
    pub fn generation(&self) -> u64 {
        self.generation
    }
}
