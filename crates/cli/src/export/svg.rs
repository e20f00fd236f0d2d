//! The plots of the report directory, drawn with plotters' SVG backend (no fonts needed;
//! text is SVG `<text>`): `tps.svg`, `blocks_per_txn.svg`, `latency.svg` and, with several
//! `--bandwidth` values, `tps_vs_bandwidth.svg`; `blocks_per_second.svg` from the time
//! series.

use super::summary::{causes_with_blocks, run_label};
use super::timeseries::{blocks_per_second, cause_blocks};
use crate::result::{Report, Sample};
use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

const W: u32 = 900;
const H: u32 = 540;

/// A colour per series index, from plotters' palette.
fn colour(i: usize) -> RGBColor {
    let p = Palette99::pick(i).to_rgba();
    RGBColor(p.0, p.1, p.2)
}

pub(super) fn bandwidths(report: &Report) -> Vec<f64> {
    let mut b: Vec<f64> = report
        .runs
        .iter()
        .filter_map(|r| r.device.bandwidth_mib_s)
        .collect();
    b.sort_by(f64::total_cmp);
    b.dedup();
    b
}

fn plot_err<E: std::fmt::Debug>(path: &Path) -> impl FnOnce(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", path.display())
}

/// Bars: one group per run, `series` stacked (stacked = true) or side by side.
fn bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    labels: &[String],
    series: &[(String, Vec<f64>)],
    colours: &[RGBColor],
    stacked: bool,
) -> Result<()> {
    let n = labels.len();
    let ymax = if stacked {
        (0..n)
            .map(|i| series.iter().map(|s| s.1[i]).sum::<f64>())
            .fold(0.0, f64::max)
    } else {
        series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .fold(0.0, f64::max)
    };
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let root = SVGBackend::new(path, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err(path))?;
    // The legend gets its own column at the right, so it never covers a bar.
    let (plot_area, legend_area) = if series.len() > 1 {
        root.split_horizontally(W - 150)
    } else {
        root.split_horizontally(W)
    };
    for (si, (name, _)) in series.iter().enumerate() {
        let y = 60 + 22 * si as i32;
        legend_area
            .draw(&Rectangle::new(
                [(8, y), (20, y + 12)],
                colours[si].filled(),
            ))
            .map_err(plot_err(path))?;
        legend_area
            .draw(&Text::new(name.clone(), (26, y), ("sans-serif", 14)))
            .map_err(plot_err(path))?;
    }
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(plot_err(path))?;
    let labels_owned = labels.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(1))
        .x_label_formatter(&move |x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels_owned.len() {
                labels_owned[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_desc)
        .draw()
        .map_err(plot_err(path))?;
    let k = series.len().max(1) as f64;
    for (si, (_, vals)) in series.iter().enumerate() {
        let c = colours[si];
        let rects: Vec<Rectangle<(f64, f64)>> = vals
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let x = i as f64;
                if stacked {
                    let base: f64 = series[..si].iter().map(|s| s.1[i]).sum();
                    Rectangle::new([(x - 0.3, base), (x + 0.3, base + v)], c.filled())
                } else {
                    let w = 0.7 / k;
                    let x0 = x - 0.35 + w * si as f64;
                    Rectangle::new([(x0, 0.0), (x0 + w * 0.9, v)], c.filled())
                }
            })
            .collect();
        chart.draw_series(rects).map_err(plot_err(path))?;
    }
    root.present().map_err(plot_err(path))?;
    Ok(())
}

pub(super) fn plot_tps(report: &Report, path: &Path) -> Result<()> {
    let labels: Vec<String> = report.runs.iter().map(run_label).collect();
    let tps = report.runs.iter().map(|r| r.results.tps).collect();
    let title = format!("{}: transactions per second", report.runs[0].workload.name);
    bars(
        path,
        &title,
        "tps",
        &labels,
        &[("tps".into(), tps)],
        &[colour(0)],
        false,
    )
}

pub(super) fn plot_blocks(report: &Report, path: &Path) -> Result<()> {
    let labels: Vec<String> = report.runs.iter().map(run_label).collect();
    let causes = causes_with_blocks(&report.runs);
    let series: Vec<(String, Vec<f64>)> = causes
        .iter()
        .map(|c| {
            let v = report
                .runs
                .iter()
                .map(|r| {
                    r.io.per_txn_by_cause
                        .get(c)
                        .map_or(0.0, |b| b.read_blocks_4k + b.write_blocks_4k)
                })
                .collect();
            (c.name().to_string(), v)
        })
        .collect();
    bars(
        path,
        "4 KiB blocks read + written per transaction, by cause",
        "4 KiB blocks / txn",
        &labels,
        &series,
        // A cause keeps its colour from one report to the next.
        &causes
            .iter()
            .map(|c| colour(*c as usize))
            .collect::<Vec<_>>(),
        true,
    )
}

pub(super) fn plot_latency(report: &Report, path: &Path) -> Result<()> {
    let labels: Vec<String> = report.runs.iter().map(run_label).collect();
    let pick = |f: fn(&mvcclab_workload::driver::Latency) -> f64| -> Vec<f64> {
        report
            .runs
            .iter()
            .map(|r| r.results.latency.get("event").map_or(0.0, f))
            .collect()
    };
    let series = vec![
        ("p50".to_string(), pick(|l| l.p50_ms)),
        ("p95".to_string(), pick(|l| l.p95_ms)),
        ("p99".to_string(), pick(|l| l.p99_ms)),
    ];
    bars(
        path,
        "transaction latency percentiles",
        "ms",
        &labels,
        &series,
        &[colour(0), colour(1), colour(2)],
        false,
    )
}

pub(super) fn plot_tps_vs_bandwidth(report: &Report, path: &Path) -> Result<()> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &report.runs {
        if let Some(b) = r.device.bandwidth_mib_s {
            lines
                .entry(r.design.name.clone())
                .or_default()
                .push((b, r.results.tps));
        }
    }
    let bw = bandwidths(report);
    let (xmin, xmax) = (bw[0], bw[bw.len() - 1]);
    let ymax = report
        .runs
        .iter()
        .map(|r| r.results.tps)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let root = SVGBackend::new(path, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: TPS versus device bandwidth",
                report.runs[0].workload.name
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0f64..ymax)
        .map_err(plot_err(path))?;
    chart
        .configure_mesh()
        .x_desc("device bandwidth (MiB/s, read and write)")
        .y_desc("tps")
        .draw()
        .map_err(plot_err(path))?;
    for (i, (name, mut pts)) in lines.into_iter().enumerate() {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(plot_err(path))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(plot_err(path))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(plot_err(path))?;
    root.present().map_err(plot_err(path))?;
    Ok(())
}

/// `blocks_per_second.svg`: 4 KiB blocks read + written per second over the measured
/// phase (`results.timeseries`), one line per run (seed 000's Figures 1b and 3); with
/// `by_cause`, one panel per run with the blocks stacked by cause instead. Runs whose
/// device I/O was not measured (a real server without `--exact-device-io`) are left out
/// rather than drawn as 0.
pub fn plot_blocks_per_second(report: &Report, path: &Path, by_cause: bool) -> Result<()> {
    let runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.measured("io.total.read_blocks_4k") && !r.results.timeseries.is_empty())
        .collect();
    let root = SVGBackend::new(path, (W, H)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err(path))?;
    let title = format!(
        "{}: 4 KiB blocks read + written per second",
        report.runs.first().map_or("", |r| r.workload.name.as_str())
    );
    let all = |s: &Sample| s.read_blocks_4k + s.write_blocks_4k;
    let xmax = runs
        .iter()
        .flat_map(|r| r.results.timeseries.iter())
        .map(|s| s.start_s + s.interval_s)
        .fold(0.0, f64::max)
        .max(1.0);
    let ymax_of = |pts: &[(f64, f64)]| pts.iter().map(|p| p.1).fold(0.0, f64::max);
    if !by_cause || runs.is_empty() {
        let lines: Vec<(String, Vec<(f64, f64)>)> = runs
            .iter()
            .map(|r| (run_label(r), blocks_per_second(&r.results.timeseries, &all)))
            .collect();
        let ymax = lines.iter().map(|l| ymax_of(&l.1)).fold(0.0, f64::max);
        let mut chart = blocks_time_chart(&root, &title, 20, xmax, ymax, path)?;
        for (i, (name, pts)) in lines.into_iter().enumerate() {
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(plot_err(path))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        if !runs.is_empty() {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(plot_err(path))?;
        }
        root.present().map_err(plot_err(path))?;
        return Ok(());
    }
    // Stacked by cause: one panel per run, the same causes (and colours) in each.
    // The causes with blocks over the phases are those with blocks in some sample.
    let causes = causes_with_blocks(&report.runs);
    let (plots, legend) = root.split_horizontally(W - 150);
    for (i, c) in causes.iter().enumerate() {
        let y = 60 + 22 * i as i32;
        let col = colour(*c as usize);
        legend
            .draw(&Rectangle::new([(8, y), (20, y + 12)], col.filled()))
            .map_err(plot_err(path))?;
        legend
            .draw(&Text::new(
                c.name().to_string(),
                (26, y),
                ("sans-serif", 14),
            ))
            .map_err(plot_err(path))?;
    }
    let panels = plots.split_evenly((runs.len(), 1));
    for (r, panel) in runs.iter().zip(panels.iter()) {
        let ts = &r.results.timeseries;
        let ymax = ymax_of(&blocks_per_second(ts, &all));
        let caption = format!("{title}: {}", run_label(r));
        let mut chart = blocks_time_chart(panel, &caption, 16, xmax, ymax, path)?;
        // Each cause is the band between the sum of the causes before it and that sum
        // plus its own blocks per second.
        let mut base: Vec<(f64, f64)> = blocks_per_second(ts, &|_| 0);
        for c in &causes {
            let own = blocks_per_second(ts, &|s| cause_blocks(s, *c));
            let top: Vec<(f64, f64)> = base
                .iter()
                .zip(&own)
                .map(|(b, o)| (b.0, b.1 + o.1))
                .collect();
            let mut band = top.clone();
            band.extend(base.iter().rev().copied());
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    colour(*c as usize).filled(),
                )))
                .map_err(plot_err(path))?;
            base = top;
        }
    }
    root.present().map_err(plot_err(path))?;
    Ok(())
}

/// Axes of blocks per second (up to `ymax`, with a tenth above) against seconds into the
/// phase (up to `xmax`) on `area`, captioned `caption` in `size`-point type.
///
/// Errors: the chart cannot be drawn (the message names `path`).
fn blocks_time_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    size: u32,
    xmax: f64,
    ymax: f64,
    path: &Path,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>> {
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", size))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(plot_err(path))?;
    chart
        .configure_mesh()
        .x_desc("seconds into the measured phase")
        .y_desc("4 KiB blocks / s")
        .draw()
        .map_err(plot_err(path))?;
    Ok(chart)
}
