//! A table's shape as SQLite reports it, in the words a schema is written in:
//! each column as its definition reads (`key TEXT NOT NULL PRIMARY KEY`), the
//! states a `CHECK (state IN (…))` allows, and each index made by `CREATE
//! INDEX` with its columns. Comparing two shapes is comparing these sets, and a
//! difference names itself.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension};

/// What a file holds under a table's name.
#[derive(Debug)]
pub(super) enum Found {
    /// Nothing of that name.
    Nothing,
    /// Something else of that name (a view).
    Other(String),
    /// A table of that shape.
    Table(Shape),
}

/// A table's columns, allowed states and indexes (see the module docs).
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Shape {
    pub(super) columns: BTreeSet<String>,
    pub(super) states: BTreeSet<String>,
    pub(super) indexes: BTreeSet<String>,
}

/// Reads `table`'s shape from the file's catalogue.
pub(super) fn read(conn: &Connection, table: &str) -> rusqlite::Result<Found> {
    let entry: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT type, sql FROM sqlite_master WHERE name = ?1 AND type IN ('table', 'view')",
            [table],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    let sql = match entry {
        None => return Ok(Found::Nothing),
        Some((kind, _)) if kind != "table" => return Ok(Found::Other(kind)),
        Some((_, sql)) => sql.unwrap_or_default(),
    };
    let mut columns = conn.prepare(
        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1) ORDER BY cid",
    )?;
    let columns = columns
        .query_map([table], |row| {
            Ok(column(
                &row.get::<_, String>(0)?,
                &row.get::<_, String>(1)?,
                row.get(2)?,
                row.get::<_, i64>(4)? > 0,
                row.get::<_, Option<String>>(3)?.as_deref(),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let names: Vec<String> = conn
        .prepare("SELECT name FROM pragma_index_list(?1) WHERE origin = 'c' ORDER BY name")?
        .query_map([table], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut indexes = BTreeSet::new();
    for name in names {
        let indexed: Vec<Option<String>> = conn
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")?
            .query_map([&name], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let indexed: Vec<&str> = indexed
            .iter()
            .map(|column| column.as_deref().unwrap_or("<expression>"))
            .collect();
        indexes.insert(index(&name, &indexed));
    }
    Ok(Found::Table(Shape {
        columns,
        states: state_check(&sql).into_iter().collect(),
        indexes,
    }))
}

/// A column as its definition reads: `name TYPE [NOT NULL] [PRIMARY KEY] [DEFAULT x]`.
pub(super) fn column(
    name: &str,
    declared: &str,
    not_null: bool,
    primary_key: bool,
    default: Option<&str>,
) -> String {
    let mut text = name.to_owned();
    if !declared.is_empty() {
        text.push(' ');
        text.push_str(&declared.to_ascii_uppercase());
    }
    if not_null {
        text.push_str(" NOT NULL");
    }
    if primary_key {
        text.push_str(" PRIMARY KEY");
    }
    if let Some(default) = default {
        text.push_str(" DEFAULT ");
        text.push_str(default);
    }
    text
}

/// An index as its definition reads: `name (column, …)`.
pub(super) fn index(name: &str, columns: &[&str]) -> String {
    format!("{name} ({})", columns.join(", "))
}

/// The string literals of the table's first `CHECK (state IN ('a', …))`, empty
/// when it has none. SQLite keeps a table's `CREATE TABLE` text as written
/// (with `ALTER TABLE … ADD COLUMN` appended), and has no pragma for a CHECK,
/// so the text is read: by tokens, so that spacing, case and quoted
/// identifiers do not matter.
fn state_check(sql: &str) -> Vec<String> {
    let tokens = tokens(sql);
    let word = |token: Option<&Token>, expected: &str| matches!(token, Some(Token::Word(w)) if w == expected);
    let punct = |token: Option<&Token>, expected: char| token == Some(&Token::Punct(expected));
    for start in 0..tokens.len() {
        let at = |offset: usize| tokens.get(start + offset);
        if !(word(at(0), "check")
            && punct(at(1), '(')
            && word(at(2), "state")
            && word(at(3), "in")
            && punct(at(4), '('))
        {
            continue;
        }
        let mut states = Vec::new();
        let mut next = start + 5;
        while let Some(Token::Literal(state)) = tokens.get(next) {
            states.push(state.clone());
            if !punct(tokens.get(next + 1), ',') {
                break;
            }
            next += 2;
        }
        return states;
    }
    Vec::new()
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    /// A keyword or identifier, lower-cased (quoted identifiers unquoted).
    Word(String),
    /// A string literal's value.
    Literal(String),
    Punct(char),
}

fn tokens(sql: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '\'' | '"' | '`' => {
                let mut text = String::new();
                while let Some(inner) = chars.next() {
                    if inner == c {
                        // A doubled quote is the quote itself.
                        if chars.peek() == Some(&c) {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    text.push(inner);
                }
                tokens.push(if c == '\'' {
                    Token::Literal(text)
                } else {
                    Token::Word(text.to_ascii_lowercase())
                });
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut text = c.to_ascii_lowercase().to_string();
                while let Some(&inner) = chars.peek() {
                    if !(inner.is_alphanumeric() || inner == '_') {
                        break;
                    }
                    text.push(inner.to_ascii_lowercase());
                    chars.next();
                }
                tokens.push(Token::Word(text));
            }
            c => tokens.push(Token::Punct(c)),
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_check_is_read_whatever_its_spelling() {
        let cases: [(&str, &[&str]); 5] = [
            (
                "state TEXT NOT NULL\n  CHECK (state IN ('queued', 'in_flight'))",
                &["queued", "in_flight"],
            ),
            ("\"state\" TEXT check(\"STATE\" in('a','b'))", &["a", "b"]),
            (
                "x INTEGER CHECK (x > 0), state TEXT CHECK (state IN ('o''k'))",
                &["o'k"],
            ),
            ("state TEXT", &[]),
            ("state TEXT CHECK (state IN ())", &[]),
        ];
        for (sql, expected) in cases {
            assert_eq!(state_check(sql), expected, "{sql}");
        }
    }

    #[test]
    fn a_column_reads_as_its_definition() {
        assert_eq!(
            column("key", "text", true, true, None),
            "key TEXT NOT NULL PRIMARY KEY"
        );
        assert_eq!(
            column("n", "INTEGER", false, false, Some("0")),
            "n INTEGER DEFAULT 0"
        );
        assert_eq!(index("i", &["a", "b"]), "i (a, b)");
    }
}
