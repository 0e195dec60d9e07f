//! The leaf records of one AG btree, a page at a time, each linked to its
//! leaf block's bytes and to what it names.

use crate::web::page::route::Route;
use crate::xfs::agmap::RecordsPage;
use std::rc::Rc;
use yew::prelude::*;

/// Records a page shows.
pub const PAGE: u64 = crate::web::page::route::AG_RECORDS_PAGE;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub page: Rc<RecordsPage>,
}

#[function_component(AgRecords)]
pub fn ag_records(props: &Props) -> Html {
    let p = &props.page;
    let hex = |agbno: u32| {
        Route::Hex(
            p.daddr
                .saturating_add(u64::from(agbno).saturating_mul(p.bbs_per_block)),
        )
        .href()
    };
    let at = |start: u64| {
        Route::AgTree {
            agno: p.agno,
            tree: p.tree.clone(),
            start,
        }
        .href()
    };
    let last = p
        .start
        .saturating_add(u64::try_from(p.rows.len()).unwrap_or(0));
    html! {
        <section class="ag-records" data-testid="ag-records" data-tree={p.tree.clone()} data-total={p.total.to_string()}>
            <h2>{ format!("AG {} {}: {} record{}{}", p.agno, p.btree_name, p.total, if p.total == 1 { "" } else { "s" }, if p.more { " or more" } else { "" }) }</h2>
            <p class="explain">{ format!("The leaf records of the {}, in key order: {}.", p.btree_name, p.meaning) }</p>
            <p class="ag-nav">
                <a href={Route::AgMap(p.agno).href()}>{ format!("AG {} map", p.agno) }</a>
                { for ["bno", "cnt", "ino", "fino", "rmap", "refcount"].iter().map(|t| html! {
                    <>{ " · " }<a class={classes!((*t == p.tree).then_some("active"))} href={Route::AgTree { agno: p.agno, tree: (*t).to_string(), start: 0 }.href()}>{ *t }</a></>
                }) }
            </p>
            if !p.problems.is_empty() {
                <ul class="problems">{ for p.problems.iter().map(|x| html! { <li class="bad">{ x }</li> }) }</ul>
            }
            <p class="pager" data-testid="ag-records-pager">
                if p.start > 0 { <a href={at(p.start.saturating_sub(PAGE))}>{ "◀ previous" }</a> }
                { format!(" records {}-{} ", p.start, last.saturating_sub(1)) }
                if last < p.total { <a href={at(last)}>{ "next ▶" }</a> }
            </p>
            <table class="records" data-keynav="list">
                <thead><tr><th class="num">{ "#" }</th><th>{ "record" }</th><th class="num">{ "leaf block" }</th><th>{ "opens" }</th></tr></thead>
                <tbody>
                { for p.rows.iter().map(|r| html! {
                    <tr data-testid="ag-record" data-index={r.index.to_string()} data-leaf={r.agbno.to_string()}>
                        <td class="num">{ r.index }</td>
                        <td class="text">{ &r.text }</td>
                        <td class="num"><a href={hex(r.agbno)}>{ r.agbno }</a></td>
                        <td>
                            if let Some(b) = r.block { <a href={hex(b)}>{ format!("block {b}") }</a> }
                            if let Some(i) = r.ino { { " " }<a href={Route::Inode(i).href()}>{ format!("inode {i}") }</a> }
                        </td>
                    </tr>
                }) }
                </tbody>
            </table>
        </section>
    }
}
