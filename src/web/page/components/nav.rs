//! The tabs and, for paths, the breadcrumb.

use crate::web::page::route::Route;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub route: Route,
    /// Views show the replayed state.
    pub replayed: bool,
    /// Ask for the replayed (true) or on-disk (false) state.
    pub on_replay: Callback<bool>,
    /// The filesystem has a metadata directory tree (its tab is shown).
    #[prop_or_default]
    pub metadir: bool,
}

#[function_component(Nav)]
pub fn nav(props: &Props) -> Html {
    let tab = |label: &str, target: Route, active: bool| {
        let class = classes!("tab", active.then_some("active"));
        html! { <a {class} href={target.href()}>{ label.to_string() }</a> }
    };
    let r = &props.route;
    let onchange = {
        let (cb, now) = (props.on_replay.clone(), props.replayed);
        Callback::from(move |_: Event| cb.emit(!now))
    };
    let crumbs_of = |p: &str, to: fn(String) -> Route| {
        let mut acc = String::new();
        let mut items = vec![html! { <a href={to("/".into()).href()}>{ "/" }</a> }];
        for seg in p.split('/').filter(|s| !s.is_empty()) {
            acc.push('/');
            acc.push_str(seg);
            items.push(html! { <>
                <span class="sep">{ " / " }</span>
                <a href={to(acc.clone()).href()}>{ seg.to_string() }</a>
            </> });
        }
        html! { <div class="crumbs" data-testid="breadcrumb">{ for items }</div> }
    };
    let crumbs = match r {
        Route::Path(p) => crumbs_of(p, Route::Path),
        Route::Metadir(p) => crumbs_of(p, Route::Metadir),
        _ => html! {},
    };
    html! {
        <nav aria-label="views">
            <div class="tabs" data-keynav="row">
                { tab("Superblock", Route::Superblock, matches!(r, Route::Superblock)) }
                { tab("Files", Route::Path("/".into()), matches!(r, Route::Path(_) | Route::Inode(_))) }
                if props.metadir {
                    <a class={classes!("tab", matches!(r, Route::Metadir(_)).then_some("active"))} data-testid="metadir-tab"
                        title="The metadata directory tree (mkfs.xfs -m metadir=1): the inodes of realtime groups and quotas, apart from the files"
                        href={Route::Metadir("/".into()).href()}>{ "Metadata tree" }</a>
                }
                { tab("Allocation groups", Route::Ags, matches!(r, Route::Ags | Route::AgMap(_) | Route::AgTree { .. })) }
                { tab("Bytes", Route::Hex(0), matches!(r, Route::Hex(_) | Route::LogHex(_))) }
                { tab("Log", Route::Log(None), matches!(r, Route::Log(_))) }
                { tab("Operations", Route::Ops { start: 0, skip: 0 }, matches!(r, Route::Ops { .. })) }
                { tab("Replay changes", Route::Replay { section: crate::web::protocol::DiffSection::Paths, filter: String::new(), start: 0 }, matches!(r, Route::Replay { .. })) }
                <label class="replay" title="Read every view through the log replayed in memory, as the kernel's recovery would leave the filesystem; the file is never written">
                    <input type="checkbox" data-testid="replay-toggle" checked={props.replayed} {onchange} />
                    { " replayed" }
                </label>
                <span class={classes!("state-badge", props.replayed.then_some("on"))} data-testid="state-badge">{ if props.replayed { "replayed state" } else { "on-disk state" } }</span>
            </div>
            { crumbs }
        </nav>
    }
}
