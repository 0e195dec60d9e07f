//! The directory tree in the sidebar: each directory's subdirectories are
//! read when it is first opened, and the current path's ancestors open by
//! themselves.

use crate::web::route::{join, Route};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// Subdirectories read so far, by directory path.
    pub tree: Rc<BTreeMap<String, Result<Vec<String>, String>>>,
    /// The directory shown in the main view, if any.
    pub current: Option<String>,
    /// Ask for the subdirectories of a path.
    pub on_load: Callback<String>,
    /// The tree is the metadata directory tree (its paths lead to
    /// `#/metadir/...`).
    #[prop_or_default]
    pub metadir: bool,
}

/// Every ancestor of `path`, "/" first, `path` itself last.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    let mut acc = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        acc.push('/');
        acc.push_str(seg);
        out.push(acc.clone());
    }
    out
}

/// Most nodes a tree shows (a guard against huge directory fans).
const MAX_CHILDREN: usize = 2000;

#[function_component(Tree)]
pub fn tree(props: &Props) -> Html {
    let expanded = use_state(|| BTreeSet::from(["/".to_string()]));
    // Open the current path's ancestors, and load what is open but unread.
    {
        let expanded = expanded.clone();
        let (tree, on_load) = (Rc::clone(&props.tree), props.on_load.clone());
        let current = props.current.clone();
        use_effect_with(
            (current, tree.len(), (*expanded).clone()),
            move |(current, _, open)| {
                let mut open = open.clone();
                let mut grew = false;
                if let Some(c) = current {
                    for a in ancestors(c) {
                        grew |= open.insert(a);
                    }
                }
                for p in &open {
                    if !tree.contains_key(p) {
                        on_load.emit(p.clone());
                    }
                }
                if grew {
                    expanded.set(open);
                }
            },
        );
    }
    let toggle = |path: String| {
        let expanded = expanded.clone();
        Callback::from(move |_: MouseEvent| {
            let mut open = (*expanded).clone();
            if !open.remove(&path) {
                open.insert(path.clone());
            }
            expanded.set(open);
        })
    };
    fn node(
        path: &str,
        name: &str,
        props: &Props,
        open: &BTreeSet<String>,
        toggle: &dyn Fn(String) -> Callback<MouseEvent>,
        depth: usize,
    ) -> Html {
        let is_open = open.contains(path);
        let is_current = props.current.as_deref() == Some(path);
        let children = if is_open && depth < 64 {
            match props.tree.get(path) {
                Some(Ok(dirs)) => html! {
                    <ul>{ for dirs.iter().take(MAX_CHILDREN).map(|d| node(&join(path, d), d, props, open, toggle, depth + 1)) }
                    if dirs.len() > MAX_CHILDREN { <li class="muted">{ format!("… {} more", dirs.len() - MAX_CHILDREN) }</li> }
                    </ul>
                },
                Some(Err(e)) => html! { <ul><li class="bad">{ e }</li></ul> },
                None => html! { <ul><li class="muted">{ "…" }</li></ul> },
            }
        } else {
            html! {}
        };
        let leaf = matches!(props.tree.get(path), Some(Ok(d)) if d.is_empty());
        html! {
            <li data-testid="tree-node" data-path={path.to_string()}>
                <button class="twisty" onclick={toggle(path.to_string())} disabled={leaf}>
                    { if leaf { " " } else if is_open { "▾" } else { "▸" } }
                </button>
                <a class={classes!(is_current.then_some("current"))} href={if props.metadir { Route::Metadir(path.to_string()) } else { Route::Path(path.to_string()) }.href()}>{ name.to_string() }</a>
                { children }
            </li>
        }
    }
    let open = (*expanded).clone();
    html! {
        <aside class="tree" data-testid={if props.metadir { "metadir-tree" } else { "tree" }} data-keynav="list"
            aria-label={if props.metadir { "metadata directory tree" } else { "directory tree" }}>
            <ul>{ node("/", "/", props, &open, &toggle, 0) }</ul>
        </aside>
    }
}
