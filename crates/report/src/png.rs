//! PNG export of the report's charts for slides (`storlab report --png DIR`): each inline SVG
//! chart of the HTML report is rasterized with resvg (pure Rust: no browser or system library
//! needed at run time; text uses the system's fonts) at twice its size, one file per chart,
//! named after the chart's id (`bars-0.png`, `latency-0.png`, `timeline-3.png`...).

use std::path::{Path, PathBuf};

use resvg::{tiny_skia, usvg};

#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("chart `{id}`: {detail}")]
    Render { id: String, detail: String },
}

/// The charts of an HTML report: (id, SVG text), in page order.
pub fn charts(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg ") {
        let Some(len) = rest[start..].find("</svg>") else {
            break;
        };
        let svg = &rest[start..start + len + "</svg>".len()];
        let id = svg
            .split(" id=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or("chart")
            .to_string();
        out.push((id, svg.to_string()));
        rest = &rest[start + len..];
    }
    out
}

/// Rasterizes one SVG at `scale` times its size.
pub fn render_png(id: &str, svg: &str, scale: f32) -> Result<Vec<u8>, PngError> {
    let err = |detail: String| PngError::Render {
        id: id.to_string(),
        detail,
    };
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| err(e.to_string()))?;
    let size = tree.size();
    let (w, h) = (
        (size.width() * scale).ceil() as u32,
        (size.height() * scale).ceil() as u32,
    );
    let mut pixmap =
        tiny_skia::Pixmap::new(w, h).ok_or_else(|| err(format!("bad size {w}x{h}")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| err(e.to_string()))
}

/// Writes every chart of `html` as `DIR/<id>.png`; returns the files written.
pub fn write_pngs(html: &str, dir: &Path) -> Result<Vec<PathBuf>, PngError> {
    std::fs::create_dir_all(dir).map_err(|source| PngError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (id, svg) in charts(html) {
        let png = render_png(&id, &svg, 2.0)?;
        let path = dir.join(format!("{}.png", storlab_results::slug(&id)));
        std::fs::write(&path, png).map_err(|source| PngError::Io {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_rasterizes_with_its_bars() {
        let xs = vec!["1".to_string()];
        let ss = vec!["a".to_string()];
        let svg = crate::svg::BarChart {
            labels: crate::svg::Labels {
                id: "b",
                title: "t",
                x: "x",
                y: "y",
            },
            width: crate::svg::FULL_WIDTH,
            x_values: &xs,
            series: &ss,
            highlight: None,
            colors: &[],
        }
        .svg(|_, _| Some(10.0));
        let html = format!("<p>x</p>{svg}<p>y</p>");
        let found = charts(&html);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "b");
        let png = render_png("b", &found[0].1, 1.0).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        // The bar's colour is in the picture.
        let pixmap = tiny_skia::Pixmap::decode_png(&png).unwrap();
        let blue = pixmap
            .pixels()
            .iter()
            .filter(|p| (p.red(), p.green(), p.blue()) == (0x00, 0x72, 0xB2))
            .count();
        assert!(blue > 1000, "only {blue} bar pixels");
    }
}
