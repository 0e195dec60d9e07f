//! The page's routes, natively: what each deep link asks the worker for
//! (`requests_for`), and the hash each route writes read back as the same
//! route. The same logic runs in the page (tests/web.rs runs the rest of
//! it in headless Chromium).

#[test]
fn every_route_asks_the_worker_for_what_it_shows() {
    use xfs_explorer::web::page::route::{requests_for, Route};
    use xfs_explorer::web::protocol::DiffSection;
    let asked = |r: Route| {
        requests_for(&r).map(|(what, reqs)| {
            let reqs: Vec<String> = reqs
                .iter()
                .map(|q| serde_json::to_string(q).unwrap())
                .collect();
            (what, reqs)
        })
    };
    let one = |what: &str, req: &str| Some((what.to_string(), vec![req.to_string()]));
    assert_eq!(asked(Route::Superblock), None);
    assert_eq!(asked(Route::Unknown("nowhere".into())), None);
    assert_eq!(
        asked(Route::Path("/a b".into())),
        one("reading /a b", r#"{"Path":{"path":"/a b"}}"#)
    );
    assert_eq!(
        asked(Route::Metadir("/rtgroups".into())),
        one(
            "reading metadata directory /rtgroups",
            r#"{"MetadirPath":{"path":"/rtgroups"}}"#
        )
    );
    assert_eq!(
        asked(Route::Inode(131)),
        one("reading inode 131", r#"{"Inode":{"ino":131}}"#)
    );
    assert_eq!(
        asked(Route::Ags),
        one("reading the allocation groups", r#""Ags""#)
    );
    assert_eq!(
        asked(Route::AgMap(3)),
        one("mapping AG 3", r#"{"AgMap":{"agno":3}}"#)
    );
    assert_eq!(
        asked(Route::AgTree {
            agno: 1,
            tree: "bno".into(),
            start: 400
        }),
        one(
            "reading the bno records of AG 1",
            r#"{"AgRecords":{"agno":1,"tree":"bno","start":400,"count":200}}"#
        )
    );
    assert_eq!(
        asked(Route::Hex(32778)),
        one("reading daddr 32778", r#"{"Hex":{"daddr":32778}}"#)
    );
    assert_eq!(
        asked(Route::LogHex(61)),
        one(
            "reading daddr 61 of the log device",
            r#"{"LogHex":{"daddr":61}}"#
        )
    );
    assert_eq!(
        asked(Route::Log(None)),
        one("finding and decoding the log", r#""Log""#)
    );
    // A selected transaction is asked for first, then the log's summary.
    assert_eq!(
        asked(Route::Log(Some(7))),
        Some((
            "finding and decoding the log".to_string(),
            vec![
                r#"{"LogTransaction":{"index":7}}"#.to_string(),
                r#""Log""#.to_string()
            ]
        ))
    );
    assert_eq!(
        asked(Route::Replay {
            section: DiffSection::Inodes,
            filter: "changed".into(),
            start: 500
        }),
        Some((
            "what replay changed".to_string(),
            vec![
                r#""ReplayDiff""#.to_string(),
                r#"{"ReplayDiffRows":{"section":"Inodes","filter":"changed","start":500,"count":500}}"#
                    .to_string()
            ]
        ))
    );
    assert_eq!(
        asked(Route::Ops { start: 2, skip: 5 }),
        Some((
            "reconstructing the operations of the log".to_string(),
            vec![
                r#""Ops""#.to_string(),
                r#"{"OpsTimeline":{"start":2,"skip":5}}"#.to_string()
            ]
        ))
    );
}

#[test]
fn every_route_reads_back_from_the_hash_it_writes() {
    use xfs_explorer::web::page::route::Route;
    use xfs_explorer::web::protocol::DiffSection;
    for r in [
        Route::Superblock,
        Route::Path("/".into()),
        Route::Path("/a b/ü%/x#y?z".into()),
        Route::Metadir("/rtgroups/0.bitmap".into()),
        Route::Inode(u64::MAX),
        Route::Ags,
        Route::AgMap(3),
        Route::AgTree {
            agno: 1,
            tree: "rmap".into(),
            start: 400,
        },
        Route::Hex(32778),
        Route::LogHex(61),
        Route::Log(None),
        Route::Log(Some(7)),
        Route::Replay {
            section: DiffSection::Inodes,
            filter: "changed".into(),
            start: 500,
        },
        Route::Ops { start: 2, skip: 5 },
    ] {
        let hash = r.href();
        assert!(hash.starts_with("#/"), "{hash}");
        assert!(
            hash.bytes().all(|c| c.is_ascii_graphic()),
            "{hash}: the hash is escaped"
        );
        assert_eq!(Route::parse(&hash), r, "{hash}");
    }
}
