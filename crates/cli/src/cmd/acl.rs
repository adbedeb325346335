//! `nvo acl add|del|show|attach|detach`: ACL profiles — named lists of flow rules without
//! `in_port` — and where they are attached (`/v1/acls`, `/v1/ports/{port}/acl`,
//! `/v1/ports/{port}/vports/{mac}/acl`). Attached, each rule is a flow-table rule with the
//! port as `in_port` (docs/acl.md).

use std::path::PathBuf;

use clap::Subcommand;
use nvo_api::{Acl, AclAttach, AclSpec, Client};
use serde_json::Value;

use super::api::{done, segment, show};
use super::qos::{attach_args, attachment};
use super::{CliError, Format};
use crate::table::Table;

/// `nvo acl ...`
#[derive(Debug, Subcommand)]
pub enum AclCmd {
    /// Add an ACL profile: rules in the flow syntax of `ovs-ofctl add-flow` without in_port
    /// (the port it is attached to is its in_port), cookie or timeouts.
    #[command(
        after_help = "Example:\n  nvo acl add no-ssh 'priority=200,tcp,tp_dst=22,actions=drop' 'priority=100,actions=normal'\n  \
                      nvo acl add web --file web.acl\n  \
                      nvo acl attach hv0 02:00:00:00:01:01 no-ssh\n\n\
                      A file holds one rule a line; '#' starts a comment. The rules act on \
                      what the port sends in; a frame no rule of the table matches is \
                      forwarded normally, so end an allow-list with a drop rule of low priority."
    )]
    Add {
        /// The profile's name.
        name: String,
        /// Its rules.
        #[arg(value_name = "RULE", required_unless_present = "file")]
        rules: Vec<String>,
        /// Read (more) rules from this file, one a line.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Delete an ACL profile (detach it first).
    #[command(after_help = "Example:\n  nvo acl del no-ssh")]
    Del {
        /// The profile's name.
        name: String,
    },
    /// Show the ACL profiles, their rules with what each matched (summed over the
    /// attachments), and where each is attached.
    #[command(visible_alias = "list", after_help = "Example:\n  nvo acl show")]
    Show,
    /// Attach an ACL profile to a port, to a shared port's virtual port (PORT MAC NAME), or
    /// to a trunk's VLAN (PORT VID NAME).
    #[command(
        override_usage = "nvo acl attach [OPTIONS] PORT [MAC|VID] NAME",
        after_help = "Example:\n  nvo acl attach c-red1 no-ssh\n  nvo acl attach hv0 02:00:00:00:01:01 no-ssh\n  \
                      nvo acl attach trunk0 10 no-ssh"
    )]
    Attach {
        /// The port, then the virtual port's MAC or the trunk's VLAN ID if any, then the
        /// profile.
        #[arg(required = true, num_args = 2..=3, value_name = "PORT [MAC|VID] NAME")]
        args: Vec<String>,
    },
    /// Detach the ACL profile of a port, virtual port or trunk VLAN (its rules leave the flow
    /// table).
    #[command(
        after_help = "Example:\n  nvo acl detach c-red1\n  nvo acl detach hv0 02:00:00:00:01:01\n  nvo acl detach trunk0 10"
    )]
    Detach {
        /// The port.
        port: String,
        /// The virtual port's MAC (a shared port) or the VLAN ID (a trunk).
        #[arg(value_name = "MAC|VID")]
        within: Option<String>,
    },
}

/// Runs `nvo acl ...`.
pub fn acl(client: &Client, format: Format, cmd: AclCmd) -> Result<(), CliError> {
    match cmd {
        AclCmd::Add { name, rules, file } => {
            let mut rules = rules;
            if let Some(path) = file {
                let text = std::fs::read_to_string(&path)
                    .map_err(|source| CliError::Read { path, source })?;
                rules.extend(file_rules(&text));
            }
            let n = rules.len();
            let body = AclSpec {
                name: name.clone(),
                rules,
            };
            let answer: Value = client.post("/v1/acls", &body)?;
            done(format, answer, format!("acl {name}: {n} rules"))
        }
        AclCmd::Del { name } => {
            client.delete(&format!("/v1/acls/{}", segment(&name)))?;
            done(format, Value::Null, format!("acl {name} deleted"))
        }
        AclCmd::Show => {
            let answer = client.get("/v1/acls")?;
            show(format, answer, |a: &Vec<Acl>| table(a).to_string())
        }
        AclCmd::Attach { args } => {
            let (port, within, name) = attach_args(&args);
            let (path, target) = attachment(port, within, "acl");
            let body = AclAttach {
                profile: name.clone(),
            };
            client.put::<_, Value>(&path, &body)?;
            done(
                format,
                Value::Null,
                format!("acl {name} attached to {target}"),
            )
        }
        AclCmd::Detach { port, within } => {
            let (path, target) = attachment(&port, within.as_deref(), "acl");
            client.delete(&path)?;
            done(format, Value::Null, format!("acl detached from {target}"))
        }
    }
}

/// The rules of an ACL file: one a line, `#` to the end of a line is a comment, blank lines
/// are skipped.
pub fn file_rules(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The profiles: one row a rule, with its counters; name and attachments on the first.
pub fn table(acls: &[Acl]) -> Table {
    let mut t = Table::new(&["NAME", "ATTACHED", "RULE", "N_PACKETS", "N_BYTES"])
        .right(3)
        .right(4);
    for a in acls {
        let attached = if a.attached.is_empty() {
            "-".to_owned()
        } else {
            a.attached.join(",")
        };
        for (i, r) in a.rules.iter().enumerate() {
            let (name, attached) = match i {
                0 => (a.name.clone(), attached.clone()),
                _ => (String::new(), String::new()),
            };
            t.row([
                name,
                attached,
                r.rule.clone(),
                r.n_packets.to_string(),
                r.n_bytes.to_string(),
            ]);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_holds_one_rule_a_line_with_comments() {
        let text = "# no ssh from this vm\n\
                    priority=200,tcp,tp_dst=22,actions=drop   # counted\n\
                    \n   \n\
                    priority=100,actions=normal\n";
        assert_eq!(
            file_rules(text),
            [
                "priority=200,tcp,tp_dst=22,actions=drop",
                "priority=100,actions=normal"
            ]
        );
        assert!(file_rules("# nothing\n\n").is_empty());
    }

    #[test]
    fn the_table_names_each_profile_once_and_counts_each_rule() {
        let acl = Acl {
            name: "no-ssh".into(),
            cookie: 1,
            rules: vec![
                nvo_api::AclRule {
                    rule: "priority=200,tcp,tp_dst=22,actions=drop".into(),
                    n_packets: 3,
                    n_bytes: 222,
                },
                nvo_api::AclRule {
                    rule: "priority=100,actions=normal".into(),
                    n_packets: 40,
                    n_bytes: 4000,
                },
            ],
            attached: vec!["hv0/02:00:00:00:01:01".into()],
        };
        let text = table(&[acl]).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].starts_with("no-ssh"), "{text}");
        assert!(lines[1].contains("hv0/02:00:00:00:01:01") && lines[1].contains("222"));
        assert!(
            !lines[2].contains("no-ssh") && lines[2].contains("4000"),
            "{text}"
        );
    }
}
