//! The schema's versions: SQL files under `journal/migrations/<backend>/`, applied
//! in order, each once, under a lock, the version recorded (SQLite: `PRAGMA
//! user_version`; PostgreSQL: the `journal_schema_versions` table).

/// One step of the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// 1, 2, …: the schema version after this step.
    pub(crate) version: u32,
    /// The file name, for errors.
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

macro_rules! migration {
    ($backend:literal, $version:literal, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sql: include_str!(concat!("../migrations/", $backend, "/", $name, ".sql")),
        }
    };
}

/// The SQLite schema, oldest first.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: &[Migration] = &[
    migration!("sqlite", 1, "0001_initial"),
    migration!("sqlite", 2, "0002_worker_incarnation"),
];

/// The PostgreSQL schema, oldest first.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: &[Migration] = &[
    migration!("postgres", 1, "0001_initial"),
    migration!("postgres", 2, "0002_worker_incarnation"),
];

/// The steps after `current`, or an error when the journal is newer than this
/// crate (a newer version of it migrated the journal: do not write to it).
pub(crate) fn pending(
    all: &'static [Migration],
    current: u32,
) -> Result<&'static [Migration], crate::JournalError> {
    let latest = all.last().map_or(0, |m| m.version);
    if current > latest {
        return Err(crate::JournalError::Schema(format!(
            "the journal's schema is version {current}, newer than this crate's {latest}; \
             upgrade reqwest-resilience-journal"
        )));
    }
    Ok(&all[all.partition_point(|m| m.version <= current)..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: &[Migration] = &[
        Migration {
            version: 1,
            name: "a",
            sql: "",
        },
        Migration {
            version: 2,
            name: "b",
            sql: "",
        },
    ];

    #[test]
    fn pending_steps_follow_the_current_version() {
        assert_eq!(pending(ALL, 0).unwrap().len(), 2);
        assert_eq!(pending(ALL, 1).unwrap()[0].name, "b");
        assert!(pending(ALL, 2).unwrap().is_empty());
        assert!(pending(ALL, 3).is_err(), "a newer journal is refused");
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn versions_are_consecutive() {
        for list in [
            SQLITE,
            #[cfg(feature = "postgres")]
            POSTGRES,
        ] {
            for (i, m) in list.iter().enumerate() {
                assert_eq!(m.version as usize, i + 1, "{}", m.name);
            }
        }
    }
}
