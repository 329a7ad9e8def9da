//! The README's quick start is the example CI runs (`--example axum_route`): every
//! line of its first Rust snippet is in the example, so the snippet builds and serves
//! without an authentication layer.

#[test]
fn the_readme_quick_start_is_the_example_that_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{root}/examples/axum_route.rs")).unwrap();
    let section = readme
        .split("## One step in front of an axum route")
        .nth(1)
        .expect("the quick start section");
    let snippet = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust snippet");
    assert!(snippet.contains(".principal(SinglePrincipal)"), "{snippet}");
    let example_lines: Vec<&str> = example.lines().map(str::trim).collect();
    for line in snippet.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            example_lines.contains(&line),
            "README line not in examples/axum_route.rs: {line}"
        );
    }
    // And its install lines: the registry form and the form that works before publishing.
    assert!(
        section.contains("cargo add tower-idempotency --path "),
        "{section}"
    );
}
