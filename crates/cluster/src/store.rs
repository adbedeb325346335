//! The writes and reads of `nvo --etcd`: blocking calls, each on its own small runtime, each
//! bounded in time.

use std::time::Duration;

use etcd_client::{DeleteOptions, GetOptions};

use crate::session::Access;

/// How long one CLI call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A failed call, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("etcd: {0}")]
pub struct StoreError(pub String);

/// Runs `call` with a client of the first endpoint that answers a status request: a call
/// goes to one live member and is made once (a client balanced over every endpoint would send
/// part of the calls to a member that is down).
fn block<T>(
    access: &Access,
    call: impl AsyncFnOnce(etcd_client::Client) -> Result<T, String>,
) -> Result<T, StoreError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoreError(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(async {
        let work = async {
            let mut refused = Vec::new();
            for endpoint in &access.endpoints {
                match access.connect(std::slice::from_ref(endpoint)).await {
                    Ok(mut client) => match client.status().await {
                        Ok(_) => return call(client).await,
                        Err(e) => refused.push(format!("{endpoint}: {e}")),
                    },
                    Err(e) => refused.push(e),
                }
            }
            Err(format!("no endpoint answered: {}", refused.join("; ")))
        };
        tokio::time::timeout(CALL_TIMEOUT, work)
            .await
            .map_err(|_| {
                StoreError(format!(
                    "no answer from {} within {CALL_TIMEOUT:?}",
                    access.endpoints.join(",")
                ))
            })?
            .map_err(StoreError)
    })
}

/// Puts `value` at `key`.
pub fn put(access: &Access, key: &str, value: Vec<u8>) -> Result<(), StoreError> {
    block(access, async |mut c| {
        c.put(key, value, None)
            .await
            .map(|_| ())
            .map_err(|e| format!("put {key}: {e}"))
    })
}

/// Deletes `key`; answers whether it existed.
pub fn delete(access: &Access, key: &str) -> Result<bool, StoreError> {
    block(access, async |mut c| {
        c.delete(key, None::<DeleteOptions>)
            .await
            .map(|r| r.deleted() > 0)
            .map_err(|e| format!("delete {key}: {e}"))
    })
}

/// Every (key, value) under `prefix`, in key order.
pub fn list(access: &Access, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
    block(access, async |mut c| {
        let read = c
            .get(prefix, Some(GetOptions::new().with_prefix()))
            .await
            .map_err(|e| format!("read {prefix}: {e}"))?;
        Ok(read
            .kvs()
            .iter()
            .map(|kv| {
                (
                    String::from_utf8_lossy(kv.key()).into_owned(),
                    kv.value().to_vec(),
                )
            })
            .collect())
    })
}
