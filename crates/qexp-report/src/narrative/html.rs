//! Narrative Markdown to HTML.

/// CommonMark with GitHub tables to HTML; an image whose address is one of
/// `charts`' file names becomes that SVG document inline, so the HTML stands alone.
pub(crate) fn to_html(markdown: &str, charts: &[(String, &str)]) -> String {
    use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};
    let mut events = Vec::new();
    // Depth inside an image being replaced: its alt-text events are dropped.
    let mut skip = 0usize;
    for ev in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        match &ev {
            Event::Start(Tag::Image { .. }) if skip > 0 => skip += 1,
            Event::End(TagEnd::Image) if skip > 0 => skip -= 1,
            _ if skip > 0 => {}
            Event::Start(Tag::Image { dest_url, .. }) => {
                match charts.iter().find(|(file, _)| **dest_url == **file) {
                    Some((_, svg)) => {
                        events.push(Event::InlineHtml(CowStr::from(svg.trim_end().to_string())));
                        skip = 1;
                    }
                    None => events.push(ev),
                }
            }
            _ => events.push(ev),
        }
    }
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}
