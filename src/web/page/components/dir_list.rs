//! A directory's entries, virtualised: only the rows in view are in the DOM,
//! so a directory of a hundred thousand entries scrolls as easily as ten.

use crate::web::page::route::{join, Route};
use crate::web::protocol::DirView;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use web_sys::HtmlElement;
use yew::prelude::*;

/// Height of one row in pixels (must match the CSS).
const ROW_PX: usize = 26;
/// Rows rendered above and below the visible window.
const OVERSCAN: usize = 20;
/// Height of the scrolling box in rows.
const VIEW_ROWS: usize = 24;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub dir: Rc<DirView>,
}

fn octal(mode: Option<u16>) -> String {
    mode.map(|m| format!("{m:04o}")).unwrap_or_default()
}

#[function_component(DirList)]
pub fn dir_list(props: &Props) -> Html {
    let scroll_top = use_state(|| 0usize);
    {
        // A new directory starts at the top.
        let scroll_top = scroll_top.clone();
        use_effect_with(props.dir.path.clone(), move |_| {
            scroll_top.set(0);
        });
    }
    let onscroll = {
        let scroll_top = scroll_top.clone();
        Callback::from(move |e: Event| {
            if let Some(el) = e.target().and_then(|t| t.dyn_into::<HtmlElement>().ok()) {
                scroll_top.set(usize::try_from(el.scroll_top()).unwrap_or(0));
            }
        })
    };
    let d = &props.dir;
    // Paths of the metadata directory tree lead to its own route.
    let route = |p: String| {
        if d.metadir {
            Route::Metadir(p)
        } else {
            Route::Path(p)
        }
    };
    let total = d.entries.len();
    let first = (*scroll_top / ROW_PX).saturating_sub(OVERSCAN);
    let last = (first + VIEW_ROWS + 2 * OVERSCAN).min(total);
    let rows = d.entries.get(first..last).unwrap_or(&[]).iter().map(|e| {
        let path = join(&d.path, &e.name);
        let href = if e.name == "." || e.name == ".." {
            Route::Inode(e.ino).href()
        } else {
            route(path).href()
        };
        let size = e.size.map(|s| s.to_string()).unwrap_or_default();
        html! {
            <div class={classes!("row", e.kind.clone())} data-testid="dir-entry" data-name={e.name.clone()}>
                <span class="kind">{ &e.kind }</span>
                <a class="ename" href={href}>{ &e.name }</a>
                <span class="mode">{ octal(e.mode) }</span>
                <span class="size">{ size }</span>
                <a class="eino" href={Route::Inode(e.ino).href()}>{ e.ino }</a>
                if let Some(err) = &e.error { <span class="bad">{ err }</span> }
            </div>
        }
    });
    // Rows in flow between two spacers that stand for the rows not drawn
    // (SVG height attributes: the page's CSP forbids inline styles).
    let above = (first * ROW_PX).to_string();
    let below = (total.saturating_sub(last) * ROW_PX).to_string();
    html! {
        <section class="dir">
            <h2>
                { if d.metadir { "Metadata directory " } else { "Directory " } }<code data-testid="dir-path">{ &d.path }</code>
                <span class="muted">{ format!(" · inode {} · {} format · ", d.ino, d.format) }<span data-testid="dir-count">{ total }</span>{ " entries" }</span>
                { " " }<a class="small" href={Route::Inode(d.ino).href()}>{ "inspect inode" }</a>
                if d.path != "/" {
                    { " " }<a class="small" data-testid="dir-parent" href={route(crate::web::page::route::parent(&d.path)).href()}>{ "up to the parent" }</a>
                }
            </h2>
            if !d.problems.is_empty() {
                <ul class="problems">{ for d.problems.iter().map(|p| html! { <li class="bad">{ p }</li> }) }</ul>
            }
            <div class="row head"><span class="kind">{ "type" }</span><span class="ename">{ "name" }</span>
                <span class="mode">{ "mode" }</span><span class="size">{ "size" }</span><span class="eino">{ "inode" }</span></div>
            <div class="vlist" {onscroll} data-testid="dir-list" data-keynav="list" role="list" aria-label="directory entries">
                <div class="vspace"><svg class="spacer" width="1" height={above} aria-hidden="true"></svg>{ for rows }<svg class="spacer" width="1" height={below} aria-hidden="true"></svg></div>
            </div>
        </section>
    }
}
