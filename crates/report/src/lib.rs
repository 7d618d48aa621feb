//! `switchboard report`: turns bench result files into one self-contained HTML page with
//! charts (Chart.js, inlined) and the tables of every figure.
//!
//! The path: `input` reads the files tolerantly and groups their runs into sources (one
//! per target per file, one colour each); `scenario` builds a section per scenario —
//! what to chart and tabulate, as plain data — and the XMPP study's after pingpong's;
//! `summary` builds the shootout table; `html` writes the page. The only script of
//! ours in the page draws the charts.

mod chart;
mod error;
mod html;
mod input;
mod scenario;
mod summary;
mod table;

use std::path::PathBuf;

pub use error::Error;

/// Flags of `switchboard report`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Result files written by `switchboard bench … --out FILE`; several files (several
    /// servers) share the charts.
    #[arg(value_name = "RESULT.json", required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the HTML report.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub out: PathBuf,
    /// The report's title.
    #[arg(long, default_value = "Switchboard bench report")]
    pub title: String,
}

/// What `generate` wrote.
#[derive(Debug, Clone)]
pub struct Report {
    pub html: String,
    /// The section ids, in page order (scenarios, then `summary` if present).
    pub sections: Vec<String>,
    /// Canvas ids of every chart.
    pub charts: Vec<String>,
    /// Source labels: one per target per file.
    pub servers: Vec<String>,
}

/// Reads the result files and renders the page, without writing it.
pub fn generate(files: &[PathBuf], title: &str) -> Result<Report, Error> {
    if files.is_empty() {
        return Err(Error::NoInput);
    }
    let mut loaded = files
        .iter()
        .map(|p| input::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let sources = input::sources(&mut loaded);
    let ctx = scenario::Ctx {
        files: &loaded,
        sources: &sources,
    };
    let sections = scenario::sections(&ctx);
    let summary = summary::table(&ctx);
    let html = html::Page {
        title,
        files: &loaded,
        sources: &sources,
        summary: summary.as_ref(),
        sections: &sections,
    }
    .render();
    let mut ids: Vec<String> = sections.iter().map(|s| s.id.clone()).collect();
    if summary.is_some() {
        ids.push("summary".to_string());
    }
    Ok(Report {
        html,
        sections: ids,
        charts: sections
            .iter()
            .flat_map(|s| s.charts.iter().map(|c| c.id.clone()))
            .collect(),
        servers: sources.iter().map(|s| s.label.clone()).collect(),
    })
}

/// Runs `switchboard report`: reads the files, writes the page to `--out`.
pub async fn run(args: Args) -> Result<(), Error> {
    // A few small files read and one written: plain blocking I/O is simpler than
    // spawn_blocking and holds a runtime thread for milliseconds.
    let report = generate(&args.files, &args.title)?;
    std::fs::write(&args.out, &report.html).map_err(|error| Error::Write {
        path: args.out.clone(),
        error,
    })?;
    println!(
        "wrote {}: {} charts, {} sections, servers: {}",
        args.out.display(),
        report.charts.len(),
        report.sections.len(),
        report.servers.join(", ")
    );
    Ok(())
}
