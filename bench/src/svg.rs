//! A hand-written SVG for the README: P6 calls and completion time against N per
//! strategy (log scale), and P3 amplification per peer. No plotting crate.

use std::fmt::Write as _;

pub struct Series<'a> {
    pub name: &'a str,
    pub color: &'a str,
    /// (x, y) points, y > 0.
    pub points: Vec<(f64, f64)>,
}

pub struct Bar<'a> {
    /// One entry per text line under the bar.
    pub label: &'a [&'a str],
    pub value: Option<f64>,
    pub highlight: bool,
}

struct Panel {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
}

const FONT: &str = "font-family=\"Helvetica, Arial, sans-serif\"";

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn text(out: &mut String, x: f64, y: f64, size: u32, anchor: &str, content: &str) {
    let _ = writeln!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" text-anchor=\"{anchor}\" {FONT}>{}</text>",
        escape(content)
    );
}

fn line(out: &mut String, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
    let _ = writeln!(
        out,
        "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" {style}/>"
    );
}

/// A line chart with a linear x axis and a log10 y axis.
fn log_chart(
    out: &mut String,
    panel: &Panel,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series<'_>],
) {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (y_min, y_max) = ys
        .filter(|y| *y > 0.0)
        .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    if x_min >= x_max || y_min > y_max {
        return;
    }
    let decade_low = y_min.log10().floor();
    let decade_high = y_max.log10().ceil().max(decade_low + 1.0);
    let x_of = |x: f64| panel.left + (x - x_min) / (x_max - x_min) * panel.width;
    let y_of = |y: f64| {
        let frac = (y.log10() - decade_low) / (decade_high - decade_low);
        panel.top + panel.height - frac * panel.height
    };
    let bottom = panel.top + panel.height;
    text(
        out,
        panel.left + panel.width / 2.0,
        panel.top - 12.0,
        14,
        "middle",
        title,
    );
    // Grid and y ticks: 1, 2, 5 per decade.
    let mut decade = decade_low;
    while decade <= decade_high {
        for factor in [1.0, 2.0, 5.0] {
            let value = 10f64.powf(decade) * factor;
            if value.log10() > decade_high + 1e-9 {
                continue;
            }
            let y = y_of(value);
            let major = factor == 1.0;
            line(
                out,
                panel.left,
                y,
                panel.left + panel.width,
                y,
                if major {
                    "stroke=\"#ccc\" stroke-width=\"1\""
                } else {
                    "stroke=\"#eee\" stroke-width=\"1\""
                },
            );
            text(out, panel.left - 6.0, y + 4.0, 11, "end", &format_si(value));
        }
        decade += 1.0;
    }
    // X ticks every 20 (the data step is 10).
    let mut x = (x_min / 20.0).ceil() * 20.0;
    while x <= x_max + 1e-9 {
        let px = x_of(x);
        line(out, px, bottom, px, bottom + 4.0, "stroke=\"#333\"");
        text(out, px, bottom + 17.0, 11, "middle", &format!("{x:.0}"));
        x += 20.0;
    }
    line(
        out,
        panel.left,
        bottom,
        panel.left + panel.width,
        bottom,
        "stroke=\"#333\"",
    );
    line(
        out,
        panel.left,
        panel.top,
        panel.left,
        bottom,
        "stroke=\"#333\"",
    );
    text(
        out,
        panel.left + panel.width / 2.0,
        bottom + 34.0,
        12,
        "middle",
        x_label,
    );
    let _ = writeln!(
        out,
        "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\" {FONT}>{}</text>",
        panel.left - 48.0,
        panel.top + panel.height / 2.0,
        escape(y_label)
    );
    for s in series {
        let points: Vec<String> = s
            .points
            .iter()
            .filter(|p| p.1 > 0.0)
            .map(|&(x, y)| format!("{:.1},{:.1}", x_of(x), y_of(y)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            s.color,
            points.join(" ")
        );
    }
}

fn format_si(value: f64) -> String {
    if value >= 1_000_000.0 {
        format!("{}M", trim(value / 1_000_000.0))
    } else if value >= 1000.0 {
        format!("{}k", trim(value / 1000.0))
    } else {
        trim(value)
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.1}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn bar_chart(out: &mut String, panel: &Panel, title: &str, bars: &[Bar<'_>], target: f64) {
    let max = bars
        .iter()
        .filter_map(|b| b.value)
        .fold(target, f64::max)
        .max(1.0);
    let top_value = (max * 1.1 * 2.0).ceil() / 2.0;
    let bottom = panel.top + panel.height;
    let y_of = |v: f64| bottom - v / top_value * panel.height;
    text(
        out,
        panel.left + panel.width / 2.0,
        panel.top - 12.0,
        14,
        "middle",
        title,
    );
    let mut tick = 0.0;
    while tick <= top_value + 1e-9 {
        let y = y_of(tick);
        line(
            out,
            panel.left,
            y,
            panel.left + panel.width,
            y,
            "stroke=\"#eee\" stroke-width=\"1\"",
        );
        text(
            out,
            panel.left - 6.0,
            y + 4.0,
            11,
            "end",
            &format!("{tick:.1}"),
        );
        tick += 0.5;
    }
    let slot = panel.width / bars.len().max(1) as f64;
    for (i, bar) in bars.iter().enumerate() {
        let x = panel.left + slot * i as f64 + slot * 0.2;
        let width = slot * 0.6;
        match bar.value {
            Some(value) => {
                let y = y_of(value);
                let color = if bar.highlight { "#d95f02" } else { "#7570b3" };
                let _ = writeln!(
                    out,
                    "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"{color}\"/>",
                    bottom - y
                );
                // Inside the bar when it is tall enough, so that it never sits on
                // the target line.
                if bottom - y > 20.0 {
                    let _ = writeln!(
                        out,
                        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"white\" {FONT}>{value:.2}</text>",
                        x + width / 2.0,
                        y + 14.0
                    );
                } else {
                    let label = format!("{value:.2}");
                    text(out, x + width / 2.0, y - 4.0, 11, "middle", &label);
                }
            }
            None => text(out, x + width / 2.0, bottom - 4.0, 11, "middle", "n/a"),
        }
        for (row, label) in bar.label.iter().enumerate() {
            text(
                out,
                x + width / 2.0,
                bottom + 15.0 + 13.0 * row as f64,
                9,
                "middle",
                label,
            );
        }
    }
    let y = y_of(target);
    line(
        out,
        panel.left,
        y,
        panel.left + panel.width,
        y,
        "stroke=\"#1b9e77\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"",
    );
    // The legend of the dashed line sits under the bar labels.
    let legend_y = bottom + 62.0;
    line(
        out,
        panel.left,
        legend_y - 4.0,
        panel.left + 24.0,
        legend_y - 4.0,
        "stroke=\"#1b9e77\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"",
    );
    text(
        out,
        panel.left + 30.0,
        legend_y,
        12,
        "start",
        &format!("target ≤ {target:.2} for reqwest-resilience (orange)"),
    );
    line(
        out,
        panel.left,
        bottom,
        panel.left + panel.width,
        bottom,
        "stroke=\"#333\"",
    );
    line(
        out,
        panel.left,
        panel.top,
        panel.left,
        bottom,
        "stroke=\"#333\"",
    );
}

/// The whole picture.
pub fn render(
    calls: &[Series<'_>],
    times: &[Series<'_>],
    bars: &[Bar<'_>],
    subtitle: &str,
) -> String {
    let (width, height) = (1340.0, 470.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">"
    );
    let _ = writeln!(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>");
    text(
        &mut out,
        20.0,
        24.0,
        16,
        "start",
        "reqwest-resilience benchmarks",
    );
    text(&mut out, 20.0, 42.0, 11, "start", subtitle);
    let panel = |left: f64| Panel {
        left,
        top: 80.0,
        width: 330.0,
        height: 270.0,
    };
    log_chart(
        &mut out,
        &panel(80.0),
        "P6: write calls (mean per run)",
        "clients N",
        "calls (log)",
        calls,
    );
    log_chart(
        &mut out,
        &panel(500.0),
        "P6: completion time (mean per run)",
        "clients N",
        "milliseconds (log)",
        times,
    );
    bar_chart(
        &mut out,
        &Panel {
            width: 370.0,
            ..panel(930.0)
        },
        "P3: requests received ÷ intents (503 outage)",
        bars,
        1.15,
    );
    // Legend for the two P6 panels.
    for (i, s) in calls.iter().enumerate() {
        let x = 80.0 + (i % 3) as f64 * 250.0;
        let y = 418.0 + (i / 3) as f64 * 18.0;
        line(
            &mut out,
            x,
            y - 4.0,
            x + 24.0,
            y - 4.0,
            &format!("stroke=\"{}\" stroke-width=\"3\"", s.color),
        );
        text(&mut out, x + 30.0, y, 12, "start", s.name);
    }
    out.push_str("</svg>\n");
    out
}
