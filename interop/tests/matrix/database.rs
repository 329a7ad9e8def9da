//! A cell's database, where its server keeps its effects (and, in the strong
//! modes, its keys): a SQLite file of its own, or a database of its own in the
//! one throwaway PostgreSQL cluster every PostgreSQL cell shares.

use std::path::{Path, PathBuf};

use tower_idempotency::rusqlite;
use tower_idempotency::tokio_postgres::{self, NoTls};

#[derive(Debug, Clone)]
pub enum Database {
    Sqlite(PathBuf),
    Postgres(String),
}

/// One effect row: what the server did, for which request body. (The table
/// also names the key, for a person reading a failed run's file.)
#[derive(Debug, Clone)]
pub struct Effect {
    pub id: i64,
    pub body: String,
}

impl Database {
    pub fn sqlite(dir: &Path, name: &str) -> Database {
        Database::Sqlite(dir.join(format!("{name}.db")))
    }

    /// A new database `name` in the cluster `conninfo` names.
    pub async fn postgres(cluster: &str, name: &str) -> Database {
        let (client, connection) = tokio_postgres::connect(cluster, NoTls)
            .await
            .expect("connect to the throwaway cluster");
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("a database for the cell");
        drop(client);
        let _ = connection.await;
        // A later `dbname` wins in a conninfo string.
        Database::Postgres(format!("{cluster} dbname={name}"))
    }

    pub fn server_arg(&self) -> String {
        match self {
            Database::Sqlite(path) => path.display().to_string(),
            Database::Postgres(conninfo) => conninfo.clone(),
        }
    }

    /// Every effect the server recorded, in order.
    pub async fn effects(&self) -> Vec<Effect> {
        match self {
            Database::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).expect("open the server's file");
                let mut statement = conn
                    .prepare("SELECT id, body FROM effects ORDER BY id")
                    .expect("the effects table");
                let rows = statement
                    .query_map([], |row| {
                        Ok(Effect {
                            id: row.get(0)?,
                            body: row.get(1)?,
                        })
                    })
                    .expect("read the effects");
                rows.map(|row| row.expect("an effect row")).collect()
            }
            Database::Postgres(conninfo) => {
                let (client, connection) = tokio_postgres::connect(conninfo, NoTls)
                    .await
                    .expect("connect to the cell's database");
                let connection = tokio::spawn(connection);
                let rows = client
                    .query("SELECT id, body FROM effects ORDER BY id", &[])
                    .await
                    .expect("read the effects");
                drop(client);
                let _ = connection.await;
                rows.iter()
                    .map(|row| Effect {
                        id: row.get(0),
                        body: row.get(1),
                    })
                    .collect()
            }
        }
    }
}
