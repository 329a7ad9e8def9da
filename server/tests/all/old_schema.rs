//! The migrations moved from strings in the code to `server/migrations/*/*.sql`
//! with their version and name unchanged: a database the code before the move
//! created opens without anything re-run, and a fresh one gets the same tables.
//!
//! The old SQL below is the text the code held, copied verbatim. Its first step
//! has no `IF NOT EXISTS`, so re-running it on an old database would fail the
//! open: a test that passes proves nothing ran again.

#[cfg(feature = "sqlite")]
mod sqlite {
    use tower_idempotency::rusqlite::{self, Connection};
    use tower_idempotency::SqliteStore;

    use crate::support::TempDir;

    /// server/src/store/sqlite/migrate.rs's step 1 before the move.
    const OLD_0001_KEYS: &str = "CREATE TABLE idempotency_keys (
        scope       BLOB    PRIMARY KEY,
        fingerprint BLOB    NOT NULL,
        generation  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        reclaimed   INTEGER NOT NULL DEFAULT 0,
        completed   INTEGER NOT NULL DEFAULT 0,
        status      INTEGER,
        headers     BLOB,
        body        BLOB,
        not_stored  TEXT
    ) WITHOUT ROWID;
    CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);";

    /// The versions table as idempotency-storage creates it, and step 1 recorded.
    const OLD_VERSIONS: &str =
        "CREATE TABLE idempotency_schema (version INTEGER NOT NULL PRIMARY KEY);
        INSERT INTO idempotency_schema (version) VALUES (1);";

    /// Every table's and index's name, columns and definition.
    fn shape(path: &std::path::Path) -> Vec<(String, String)> {
        let conn = Connection::open(path).unwrap();
        let mut statement = conn
            .prepare(
                "SELECT m.name, group_concat(p.name || ' ' || p.type || ' ' || p.\"notnull\"
                     || ' ' || coalesce(p.dflt_value, '-') || ' ' || p.pk, ', ')
                 FROM sqlite_master m, pragma_table_info(m.name) p
                 WHERE m.type = 'table' GROUP BY m.name
                 UNION ALL
                 SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
                 ORDER BY 1",
            )
            .unwrap();
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn a_file_made_before_the_move_opens_with_nothing_run_again() {
        let dir = TempDir::new("old-schema");
        let path = dir.path().join("keys.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(OLD_0001_KEYS).unwrap();
            conn.execute_batch(OLD_VERSIONS).unwrap();
            conn.execute(
                "INSERT INTO idempotency_keys (scope, fingerprint, generation, expires_at)
                 VALUES (X'01', X'02', 1, 4102444800000)",
                [],
            )
            .unwrap();
        }
        let before = shape(&path);
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        let versions: Vec<i64> = conn
            .prepare("SELECT version FROM idempotency_schema")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(versions, [1], "no step recorded again");
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM idempotency_keys", [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(rows, 1, "the old row is kept");
        assert_eq!(
            shape(&path),
            before,
            "the schema is as the old code left it"
        );

        // A fresh file from the .sql files has exactly the old tables.
        let fresh = dir.path().join("fresh.db");
        drop(SqliteStore::open(&fresh).unwrap());
        assert_eq!(shape(&fresh), before);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use tower_idempotency::PostgresStore;

    use crate::throwaway_pg::Cluster;

    /// server/src/store/postgres/migrate.rs's step 1 before the move.
    const OLD_0001_KEYS: &str = "CREATE SEQUENCE idempotency_generation;
     CREATE TABLE idempotency_keys (
        scope       BYTEA    PRIMARY KEY,
        fingerprint BYTEA    NOT NULL,
        generation  BIGINT   NOT NULL,
        expires_at  BIGINT   NOT NULL,
        reclaimed   BOOLEAN  NOT NULL DEFAULT false,
        completed   BOOLEAN  NOT NULL DEFAULT false,
        status      INTEGER,
        headers     BYTEA,
        body        BYTEA,
        not_stored  TEXT
     );
     CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);";

    /// The versions table as idempotency-storage creates it, and step 1 recorded.
    const OLD_VERSIONS: &str = "CREATE TABLE idempotency_schema (version BIGINT PRIMARY KEY);
        INSERT INTO idempotency_schema (version) VALUES (1);";

    async fn client(conninfo: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    }

    /// Every column of the public schema, the indexes and the sequences.
    async fn shape(client: &tokio_postgres::Client) -> Vec<String> {
        let rows = client
            .query(
                "SELECT table_name || '.' || column_name || ' ' || data_type || ' '
                     || is_nullable || ' ' || coalesce(column_default, '-')
                 FROM information_schema.columns WHERE table_schema = 'public'
                 UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'
                 UNION ALL SELECT 'sequence ' || sequence_name
                     FROM information_schema.sequences WHERE sequence_schema = 'public'
                 ORDER BY 1",
                &[],
            )
            .await
            .unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    }

    #[tokio::test]
    async fn a_database_made_before_the_move_opens_with_nothing_run_again() {
        let Some(cluster) = Cluster::start() else {
            return;
        };
        let old = cluster.database("old_schema").await;
        let conn = client(&old).await;
        conn.batch_execute(OLD_0001_KEYS).await.unwrap();
        conn.batch_execute(OLD_VERSIONS).await.unwrap();
        let before = shape(&conn).await;
        drop(PostgresStore::connect(&old).await.unwrap());
        let versions: Vec<i64> = conn
            .query("SELECT version FROM idempotency_schema", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(versions, [1], "no step recorded again");
        assert_eq!(
            shape(&conn).await,
            before,
            "the schema is as the old code left it"
        );

        // A fresh database from the .sql files has exactly the old tables.
        let fresh = cluster.database("fresh_schema").await;
        drop(PostgresStore::connect(&fresh).await.unwrap());
        assert_eq!(shape(&client(&fresh).await).await, before);
    }
}
