//! The `.proto` against the protocol's wire contract. The tables below are the contract as
//! url-frontier defines it (message and field names, numbers, types; RPCs and their
//! streaming), written out independently of `proto/urlfrontier.proto`, which is compiled here
//! and compared to them; then byte-exact encodings of the generated types, worked out by hand
//! from the protobuf encoding rules.

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;
use urlfrontier_proto::v2;

mod common;

const MESSAGES: &str = "
Stats: size=1 uint64, inProcess=2 uint32, counts=3 map<string,uint64>, numberOfQueues=4 uint64, crawlID=5 string
Pagination: start=1 uint32, size=2 uint32, include_inactive=3 bool, crawlID=4 string, local=5 bool
DeleteCrawlMessage: value=1 string, local=2 bool
Empty:
Local: local=1 bool
Active: state=1 bool, local=2 bool
Boolean: state=1 bool
Long: value=1 uint64
QueueList: values=1 repeated string, total=2 uint64, start=3 uint32, size=4 uint32, crawlID=5 string
StringList: values=1 repeated string
QueueWithinCrawlParams: key=1 string, crawlID=2 string, local=3 bool
QueueDelayParams: key=1 string, delay_requestable=2 uint32, crawlID=3 string, local=4 bool
BlockQueueParams: key=1 string, time=2 uint64, crawlID=3 string, local=4 bool
GetParams: max_urls_per_queue=1 uint32, max_queues=2 uint32, key=3 string, delay_requestable=4 uint32, anyCrawlID=5 oneof(item) AnyCrawlID, crawlID=6 oneof(item) string
AnyCrawlID:
URLItem: discovered=1 oneof(item) DiscoveredURLItem, known=2 oneof(item) KnownURLItem, ID=3 string, creation_date=4 uint64
AckMessage: ID=1 string, status=2 AckMessage.Status
URLInfo: url=1 string, key=2 string, metadata=3 map<string,StringList>, crawlID=4 string
KnownURLItem: info=1 URLInfo, refetchable_from_date=2 uint64
DiscoveredURLItem: info=1 URLInfo
DiscoveredBatch: ID=1 string, items=2 repeated URLInfo
BatchAck: ID=1 string, statuses=2 repeated AckMessage.Status
LogLevelParams: package=1 string, level=2 LogLevelParams.Level, local=3 bool
CrawlLimitParams: key=1 string, limit=2 uint32, crawlID=3 string, local=4 bool
URLStatusRequest: url=1 string, key=2 string, crawlID=3 string
ListUrlParams: start=1 uint32, size=2 uint32, key=3 string, crawlID=4 string, local=5 bool, filter=6 optional string, ignoreCase=7 optional bool
CountUrlParams: key=1 string, crawlID=2 string, filter=3 optional string, ignoreCase=4 optional bool, local=5 optional bool
PurgeUrlParams: key=1 string, crawlID=2 string, days=3 uint32
";

const ENUMS: &str = "
AckMessage.Status: OK=0, SKIPPED=1, FAIL=2
LogLevelParams.Level: TRACE=0, DEBUG=1, INFO=2, WARN=3, ERROR=4
";

const RPCS: &str = "
ListNodes(Empty) -> StringList
ListCrawls(Local) -> StringList
DeleteCrawl(DeleteCrawlMessage) -> Long
ListQueues(Pagination) -> QueueList
GetURLs(GetParams) -> stream URLInfo
PutURLs(stream URLItem) -> stream AckMessage
PutDiscovered(stream DiscoveredBatch) -> stream BatchAck
GetStats(QueueWithinCrawlParams) -> Stats
DeleteQueue(QueueWithinCrawlParams) -> Long
BlockQueueUntil(BlockQueueParams) -> Empty
SetActive(Active) -> Empty
GetActive(Local) -> Boolean
SetDelay(QueueDelayParams) -> Empty
SetLogLevel(LogLevelParams) -> Empty
SetCrawlLimit(CrawlLimitParams) -> Empty
GetURLStatus(URLStatusRequest) -> URLItem
ListURLs(ListUrlParams) -> stream URLItem
CountURLs(CountUrlParams) -> Long
PurgeURLs(PurgeUrlParams) -> Long
";

/// A table's lines, sorted (the order of declarations is not part of the contract).
fn lines(table: &str) -> Vec<String> {
    let mut out: Vec<String> = table
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    out.sort();
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// `.urlfrontier.AckMessage.Status` → `AckMessage.Status`.
fn short(type_name: &str) -> &str {
    type_name.trim_start_matches(".urlfrontier.")
}

#[test]
fn messages_enums_and_rpcs_are_the_protocols() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fds = protox::compile(["urlfrontier.proto"], [root.join("proto")]).expect("the .proto");
    assert_eq!(fds.file.len(), 1);
    let file = &fds.file[0];
    assert_eq!(file.package(), "urlfrontier");

    let mut messages = Vec::new();
    let mut enums = Vec::new();
    for m in &file.message_type {
        let maps: BTreeMap<&str, String> = m
            .nested_type
            .iter()
            .filter(|n| n.options.as_ref().is_some_and(|o| o.map_entry()))
            .map(|n| {
                let kv: Vec<String> = n.field.iter().map(type_of).collect();
                (n.name(), format!("map<{}>", kv.join(",")))
            })
            .collect();
        let fields: Vec<String> = m
            .field
            .iter()
            .map(|f| {
                let ty = type_of(f);
                let entry = ty.rsplit('.').next().unwrap_or_default();
                let shape = if let Some(map) = maps.get(entry) {
                    map.clone()
                } else if f.proto3_optional() {
                    format!("optional {ty}")
                } else if let Some(i) = f.oneof_index {
                    format!("oneof({}) {ty}", m.oneof_decl[i as usize].name())
                } else if f.label().as_str_name() == "LABEL_REPEATED" {
                    format!("repeated {ty}")
                } else {
                    ty
                };
                format!("{}={} {shape}", f.name(), f.number())
            })
            .collect();
        messages.push(format!("{}: {}", m.name(), fields.join(", ")));
        for e in &m.enum_type {
            let values: Vec<String> = e
                .value
                .iter()
                .map(|v| format!("{}={}", v.name(), v.number()))
                .collect();
            enums.push(format!("{}.{}: {}", m.name(), e.name(), values.join(", ")));
        }
    }
    let messages = messages.iter().map(|l| l.trim_end().to_owned()).collect();
    assert_eq!(sorted(messages), lines(MESSAGES));
    assert_eq!(sorted(enums), lines(ENUMS));

    assert_eq!(file.service.len(), 1);
    assert_eq!(file.service[0].name(), "URLFrontier");
    let stream = |yes: bool| if yes { "stream " } else { "" };
    let rpcs: Vec<String> = file.service[0]
        .method
        .iter()
        .map(|r| {
            format!(
                "{}({}{}) -> {}{}",
                r.name(),
                stream(r.client_streaming()),
                short(r.input_type()),
                stream(r.server_streaming()),
                short(r.output_type())
            )
        })
        .collect();
    assert_eq!(sorted(rpcs), lines(RPCS));
}

/// A field's type as the tables write it: a scalar's proto name, else the message or enum.
fn type_of(f: &prost_types::FieldDescriptorProto) -> String {
    match f.r#type().as_str_name() {
        "TYPE_MESSAGE" | "TYPE_ENUM" => short(f.type_name()).to_owned(),
        scalar => scalar.trim_start_matches("TYPE_").to_lowercase(),
    }
}

#[test]
fn encodings_are_byte_exact() {
    let samples = common::samples();
    for (ours, by_hand) in &samples {
        assert_eq!(ours, by_hand);
    }
    // Read back: the first GetParams and the URLItem decode to what encodes them again.
    let get = v2::GetParams::decode(&samples[0].1[..]).unwrap();
    assert_eq!(get.item, Some(v2::get_params::Item::CrawlId("c".into())));
    assert_eq!(get.encode_to_vec(), samples[0].1);
    let item = v2::UrlItem::decode(&samples[2].1[..]).unwrap();
    assert_eq!(item.id, "i");
    assert_eq!(item.encode_to_vec(), samples[2].1);
}
