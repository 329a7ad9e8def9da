//! The storage crate's throwaway PostgreSQL cluster, with a database per test case.

use idempotency_storage::throwaway_postgres::{Durability, ThrowawayPostgres};

pub struct Cluster(ThrowawayPostgres);

impl Cluster {
    /// A running cluster, or `None` without PostgreSQL binaries (then the caller
    /// fails unless `TOWER_IDEMPOTENCY_SKIP_POSTGRES` is set: CI installs them).
    pub fn start() -> Option<Self> {
        match ThrowawayPostgres::start(Durability::Off) {
            Ok(Some(cluster)) => Some(Self(cluster)),
            Ok(None) => {
                assert!(
                    std::env::var_os("TOWER_IDEMPOTENCY_SKIP_POSTGRES").is_some(),
                    "no PostgreSQL binaries: run journal/scripts/ensure-postgres.sh \
                     (or set TOWER_IDEMPOTENCY_SKIP_POSTGRES=1 to skip these tests)"
                );
                None
            }
            Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
        }
    }

    /// A fresh database in the cluster (one per test case).
    pub async fn database(&self, name: &str) -> String {
        let conninfo = self.0.conninfo();
        let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        conninfo.replace("dbname=postgres", &format!("dbname={name}"))
    }
}

impl Cluster {
    /// Stops the server (fast shutdown: connections are cut).
    pub fn stop(&self) {
        self.0.stop().expect("stop the cluster");
    }

    /// Starts the server again on the same port.
    pub fn restart(&self) {
        self.0.restart().expect("start the cluster again");
    }
}

/// One cluster per test: stopped when the test is done with it (its files go
/// when the test process exits).
impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.0.stop_immediate();
    }
}
