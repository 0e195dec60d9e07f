//! The directory tree in the sidebar: each directory's subdirectories are
//! read when it is first opened, and the current path's ancestors open by
//! themselves ([`DirTree`] holds what was read and what is open).

use crate::web::page::caches::{join, DirTree, TREE_DEPTH_SHOWN};
use crate::web::page::context::use_worker_context;
use crate::web::page::route::Route;
use crate::web::protocol::Request;
use std::collections::BTreeSet;
use std::rc::Rc;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// Subdirectories read (at most its cap's directories), and those open.
    pub tree: Rc<DirTree>,
    /// The directory shown in the main view, if any.
    pub current: Option<String>,
    /// Open or close a directory.
    pub on_toggle: Callback<String>,
    /// Bumped when another image or state is shown (what was asked of the
    /// worker before is asked again).
    pub generation: u32,
    /// The tree is the metadata directory tree (its paths lead to
    /// `#/metadir/...`).
    #[prop_or_default]
    pub metadir: bool,
}

#[function_component(Tree)]
pub fn tree(props: &Props) -> Html {
    // Ask for what is open and drawn but unread, once while it stays so.
    let asked = use_mut_ref(|| (0u32, BTreeSet::<String>::new()));
    {
        let worker = use_worker_context();
        let metadir = props.metadir;
        use_effect_with(
            (props.tree.wanted(), props.generation),
            move |(wanted, generation)| {
                let mut asked = asked.borrow_mut();
                if asked.0 != *generation {
                    *asked = (*generation, BTreeSet::new());
                }
                for p in wanted {
                    if !asked.1.contains(p) {
                        worker.send(Request::TreeChildren {
                            path: p.clone(),
                            metadir,
                        });
                    }
                }
                // Inserted, not collected: collecting sorts, another copy
                // of the sort in the wasm.
                asked.1.clear();
                asked.1.extend(wanted.iter().cloned());
            },
        );
    }
    let toggle = |path: String| {
        let on_toggle = props.on_toggle.clone();
        Callback::from(move |_: MouseEvent| on_toggle.emit(path.clone()))
    };
    fn node(
        path: &str,
        name: &str,
        props: &Props,
        toggle: &dyn Fn(String) -> Callback<MouseEvent>,
        depth: usize,
    ) -> Html {
        let is_open = props.tree.is_open(path);
        let is_current = props.current.as_deref() == Some(path);
        let children = if is_open && depth < TREE_DEPTH_SHOWN {
            match props.tree.listing(path).map(|l| &**l) {
                Some(Ok(dirs)) => html! {
                    <ul>{ for dirs.names.iter().map(|d| node(&join(path, d), d, props, toggle, depth + 1)) }
                    if dirs.total > dirs.names.len() { <li class="muted" data-testid="tree-more">{ format!("… {} more", dirs.total - dirs.names.len()) }</li> }
                    </ul>
                },
                Some(Err(e)) => html! { <ul><li class="bad">{ e.clone() }</li></ul> },
                None => html! { <ul><li class="muted">{ "…" }</li></ul> },
            }
        } else {
            html! {}
        };
        let leaf = matches!(props.tree.listing(path).map(|l| &**l), Some(Ok(d)) if d.total == 0);
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
    html! {
        <aside class="tree" data-testid={if props.metadir { "metadir-tree" } else { "tree" }} data-keynav="list"
            data-kept={props.tree.len().to_string()} data-kept-bytes={props.tree.bytes().to_string()} data-cap={props.tree.cap().entries.to_string()}
            aria-label={if props.metadir { "metadata directory tree" } else { "directory tree" }}>
            <ul>{ node("/", "/", props, &toggle, 0) }</ul>
        </aside>
    }
}
