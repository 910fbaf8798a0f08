//! `?crawl=ID`: every route addresses one of the service's crawls — `DEFAULT` without it, a
//! crawl url-frontier clients made with it — and `GET /api/v1/crawls` lists them; an ID
//! nobody made is 404 and one that cannot be an ID is 400, both naming the parameter.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crawl_parameter_addresses_each_crawl_of_the_service() {
    let site = site(10, 1).await;
    let svc = start(&site, Some(0), "").await;
    let api = &svc.api;
    // A crawl as a url-frontier client's first put makes it.
    svc.crawls.get_or_create("news").await.unwrap();

    let (code, listed) = api.call("GET", "/api/v1/crawls", None).await;
    assert_eq!(code, 200, "{listed}");
    let ids: Vec<&str> = listed["crawls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["DEFAULT", "news"]);

    // A seed to the named crawl is its own: queued there, and new to DEFAULT.
    let seed = site.site().seed_url();
    let body = json!({ "urls": [seed] });
    let (code, answer) = api
        .call("POST", "/api/v1/seeds?crawl=news", Some(body.clone()))
        .await;
    assert_eq!(
        (code, &answer["results"][0]["result"]),
        (200, &json!("admitted"))
    );
    let (_, news) = api.call("GET", "/api/v1/status?crawl=news", None).await;
    assert_eq!(news["queued"], 1, "{news}");
    assert_eq!(api.status().await["queued"], 0);
    let (_, answer) = api.call("POST", "/api/v1/seeds", Some(body)).await;
    assert_eq!(answer["results"][0]["result"], "admitted", "{answer}");

    // The route's own parameters are kept beside it, in any order.
    let (code, hosts) = api
        .call("GET", "/api/v1/hosts?limit=5&crawl=news&sort=name", None)
        .await;
    assert_eq!(code, 200, "{hosts}");
    assert_eq!(hosts["hosts"].as_array().unwrap().len(), 1, "{hosts}");
    let (_, listed) = api.call("GET", "/api/v1/crawls", None).await;
    assert_eq!(listed["crawls"][1]["queued"], 1, "{listed}");

    // /metrics counts every crawl's URLs by state.
    let (code, _, metrics) = http(api.addr, "GET", "/metrics", "127.0.0.1", &[], None).await;
    assert_eq!(code, 200);
    let metrics = String::from_utf8(metrics).unwrap();
    for line in [
        "crawler_crawl_urls{crawl=\"news\",state=\"queued\"} 1",
        "crawler_crawl_urls{crawl=\"DEFAULT\",state=\"queued\"} 1",
        "crawler_crawl_urls{crawl=\"news\",state=\"done\"} 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }

    // Pause applies to the crawl named.
    let (code, _) = api.call("POST", "/api/v1/pause?crawl=news", None).await;
    assert_eq!(code, 200);
    assert!(svc.crawls.get("news").unwrap().unwrap().control.paused());
    assert!(!svc.crawls.default_crawl().control.paused());

    // An ID nobody made, one that cannot be an ID, or two of them: refused, naming `crawl`.
    for (query, want) in [
        ("crawl=nobody", 404),
        ("crawl=..%2Fx", 400),
        ("crawl=a&crawl=b", 400),
    ] {
        let (code, e) = api
            .call("GET", &format!("/api/v1/status?{query}"), None)
            .await;
        assert_eq!((code, &e["field"]), (want, &json!("crawl")), "{query}: {e}");
    }
    assert!(
        svc.crawls.get("nobody").unwrap().is_none(),
        "the API makes no crawl"
    );

    // The OpenAPI document declares it.
    let (_, doc) = api.call("GET", "/openapi.json", None).await;
    let params = &doc["paths"]["/api/v1/status"]["parameters"];
    assert_eq!(params[0]["name"], "crawl", "{params}");
    svc.stop().await;
}
