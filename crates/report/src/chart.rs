//! What a chart shows, as data: `assets/report.js` turns each `Chart` into a Chart.js
//! chart. Deciding what to plot stays here, in Rust, where it is tested; the script
//! only draws.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Numeric x; one line per series.
    Line,
    /// One group of bars per category; one bar per series in each group.
    Bar,
    /// Numeric x and y; each point a disc whose area shows a third figure (`Point::r`).
    Bubble,
}

#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    /// The canvas id, unique in the page.
    pub id: String,
    pub kind: Kind,
    pub title: String,
    /// Drawn under the title in red: a short note of the caveats below.
    pub subtitle: Option<String>,
    /// Shown under the chart in red: which series were CPU-bound or partial.
    #[serde(skip)]
    pub warnings: Vec<String>,
    pub x: Axis,
    pub y: Axis,
    /// Bar charts: the group labels; each series has one point per category.
    pub categories: Vec<String>,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    /// With its unit, e.g. "mean round trip (ms)".
    pub title: String,
    pub log: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub label: String,
    /// A CSS colour.
    pub color: String,
    /// A Chart.js point style.
    pub point_style: &'static str,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Point {
    /// Line and bubble charts only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<f64>,
    /// `None` draws nothing (a gap in a line, no bar).
    pub y: Option<f64>,
    /// A caveat shown in the tooltip; the point is drawn as a cross.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
    /// Bubble charts: the disc's radius in pixels (see `bubble_radius`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r: Option<f64>,
    /// Shown in the tooltip: the figures behind the point, with their units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Chart {
    pub fn line(id: String, title: impl Into<String>, x: &str, y: &str) -> Chart {
        Chart {
            id,
            kind: Kind::Line,
            title: title.into(),
            subtitle: None,
            warnings: Vec::new(),
            x: Axis {
                title: x.to_string(),
                log: false,
            },
            y: Axis {
                title: y.to_string(),
                log: false,
            },
            categories: Vec::new(),
            series: Vec::new(),
        }
    }

    pub fn bar(
        id: String,
        title: impl Into<String>,
        categories: Vec<String>,
        x: &str,
        y: &str,
    ) -> Chart {
        Chart {
            kind: Kind::Bar,
            categories,
            ..Chart::line(id, title, x, y)
        }
    }

    pub fn bubble(id: String, title: impl Into<String>, x: &str, y: &str) -> Chart {
        Chart {
            kind: Kind::Bubble,
            ..Chart::line(id, title, x, y)
        }
    }

    /// True when no series has a value to draw.
    pub fn is_empty(&self) -> bool {
        self.series
            .iter()
            .all(|s| s.points.iter().all(|p| p.y.is_none()))
    }

    /// Drops series without values and switches axes whose values span two or more
    /// decades to a log scale (broadcast rates grow geometrically).
    pub fn finish(mut self) -> Chart {
        self.series
            .retain(|s| s.points.iter().any(|p| p.y.is_some()));
        let xs = self.series.iter().flat_map(|s| {
            s.points
                .iter()
                .filter(|p| p.y.is_some())
                .filter_map(|p| p.x)
        });
        self.x.log = self.kind != Kind::Bar && spans_decades(xs);
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.y));
        self.y.log = spans_decades(ys);
        self
    }
}

fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        if v <= 0.0 {
            // A log axis cannot show zero; keep the axis linear rather than hide a point.
            return false;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    hi > 0.0 && hi / lo >= 100.0
}

/// The largest disc of a bubble chart, in pixels.
pub const BUBBLE_MAX_RADIUS: f64 = 28.0;

/// The radius that gives `value` a disc whose area is to the largest disc's as `value`
/// is to `max`, so areas compare like the figures (never under 3 px, so it stays visible).
pub fn bubble_radius(value: f64, max: f64) -> f64 {
    if max <= 0.0 || value <= 0.0 {
        return 3.0;
    }
    (BUBBLE_MAX_RADIUS * (value / max).sqrt()).max(3.0)
}

/// One hue per source, so a server has the same colour in every chart.
const HUES: [u16; 8] = [212, 28, 140, 354, 271, 190, 45, 320];

/// The colour of source `source`; `shade` of `shades` picks a darker or lighter tone of
/// that hue for the source's several lines (broadcast levels, chat room counts).
pub fn color(source: usize, shade: usize, shades: usize) -> String {
    let hue = HUES[source % HUES.len()];
    let light = if shades <= 1 {
        45
    } else {
        34 + (30 * shade / (shades - 1)) as u16
    };
    format!("hsl({hue} 65% {light}%)")
}

/// Point styles told apart in the legend; the cross is kept for flagged points.
const POINT_STYLES: [&str; 6] = [
    "circle",
    "rect",
    "triangle",
    "rectRot",
    "star",
    "rectRounded",
];

pub fn point_style(i: usize) -> &'static str {
    POINT_STYLES[i % POINT_STYLES.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(x: f64, y: f64) -> Point {
        Point {
            x: Some(x),
            y: Some(y),
            flag: None,
            ..Default::default()
        }
    }

    #[test]
    fn log_axes_only_for_wide_positive_ranges() {
        let mut c = Chart::line("c".into(), "t", "x", "y");
        c.series.push(Series {
            label: "a".into(),
            color: color(0, 0, 1),
            point_style: "circle",
            points: vec![point(20.0, 1.0), point(30_000.0, 50.0)],
        });
        let c = c.finish();
        assert!(c.x.log);
        assert!(!c.y.log);
        assert!(!spans_decades([0.0, 1000.0].into_iter()));
    }

    #[test]
    fn empty_series_are_dropped() {
        let mut c = Chart::bar("c".into(), "t", vec!["websocket".into()], "x", "y");
        c.series.push(Series {
            label: "a".into(),
            color: color(1, 0, 1),
            point_style: "circle",
            points: vec![Point {
                x: None,
                y: None,
                flag: None,
                ..Default::default()
            }],
        });
        assert!(c.is_empty());
        assert!(c.finish().series.is_empty());
    }

    #[test]
    fn bubble_areas_follow_the_figures() {
        let big = bubble_radius(200.0, 200.0);
        let quarter = bubble_radius(50.0, 200.0);
        assert_eq!(big, BUBBLE_MAX_RADIUS);
        assert!((quarter - BUBBLE_MAX_RADIUS / 2.0).abs() < 1e-9, "a quarter of the area, half the radius");
        assert_eq!(bubble_radius(0.001, 200.0), 3.0);
        assert_eq!(bubble_radius(1.0, 0.0), 3.0);
    }

    #[test]
    fn shades_stay_in_range() {
        assert_eq!(color(0, 0, 3), "hsl(212 65% 34%)");
        assert_eq!(color(9, 2, 3), "hsl(28 65% 64%)");
    }
}
