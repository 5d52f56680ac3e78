//! The SVG pieces the figures share: escaping, the opening of a figure, markers.

use std::fmt::Write as _;

/// Escapes text for HTML and SVG (attributes included).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The opening `<svg>` of a `w` x `h` figure with the text style every figure uses.
pub fn open(w: f64, h: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" \
         font-family=\"sans-serif\" font-size=\"11\">"
    )
}

/// A marker shape of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A filled square.
    Square,
    /// A triangle pointing up.
    Triangle,
    /// A diamond.
    Diamond,
    /// A cross (two strokes).
    Cross,
    /// An open circle.
    Ring,
}

impl Marker {
    /// Every marker, in the order series take them.
    pub const ALL: [Marker; 6] = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
        Marker::Cross,
        Marker::Ring,
    ];

    /// Draws the marker at `(x, y)` in `colour`, with `title` as its tooltip.
    pub fn draw(self, s: &mut String, x: f64, y: f64, colour: &str, title: &str) {
        let r = 4.5;
        let t = if title.is_empty() {
            String::new()
        } else {
            format!("<title>{}</title>", esc(title))
        };
        let _ = match self {
            Marker::Circle => write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{colour}\">{t}</circle>"
            ),
            Marker::Ring => write!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\">{t}</circle>"
            ),
            Marker::Square => write!(
                s,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\" fill=\"{colour}\">{t}</rect>",
                x - r,
                y - r,
                2.0 * r,
                2.0 * r
            ),
            Marker::Triangle => write!(
                s,
                "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"{colour}\">{t}</polygon>",
                x,
                y - r - 1.0,
                x - r - 0.5,
                y + r,
                x + r + 0.5,
                y + r
            ),
            Marker::Diamond => write!(
                s,
                "<polygon points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\" fill=\"{colour}\">{t}</polygon>",
                x,
                y - r - 1.0,
                x + r + 1.0,
                y,
                x,
                y + r + 1.0,
                x - r - 1.0,
                y
            ),
            Marker::Cross => write!(
                s,
                "<path d=\"M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}\" stroke=\"{colour}\" stroke-width=\"2.5\">{t}</path>",
                x - r,
                y - r,
                x + r,
                y + r,
                x - r,
                y + r,
                x + r,
                y - r
            ),
        };
    }
}

/// A text element: `anchor` is `start`, `middle` or `end`.
pub fn text(s: &mut String, x: f64, y: f64, anchor: &str, body: &str) {
    let _ = write!(
        s,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\">{}</text>",
        esc(body)
    );
}

/// A vertical axis title, rotated, centred at `(x, y)`.
pub fn vtitle(s: &mut String, x: f64, y: f64, body: &str) {
    let _ = write!(
        s,
        "<text transform=\"translate({x:.1},{y:.1}) rotate(-90)\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
        esc(body)
    );
}

/// A horizontal axis title, centred at `(x, y)`.
pub fn htitle(s: &mut String, x: f64, y: f64, body: &str) {
    let _ = write!(
        s,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
        esc(body)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_markers() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        for m in Marker::ALL {
            let mut s = String::new();
            m.draw(&mut s, 10.0, 10.0, "#000", "p <1>");
            assert!(s.contains("<title>p &lt;1&gt;</title>"), "{s}");
        }
    }
}
