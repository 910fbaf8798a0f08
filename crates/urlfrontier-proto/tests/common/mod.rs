//! What the wire tests share: a few messages of the protocol, built with the generated types,
//! each beside the bytes worked out by hand from the protobuf encoding rules.

use prost::Message;
use urlfrontier_proto::v2;

/// Each sample's encoding by the generated types, and its hand-worked bytes, in this order:
/// GetParams with a crawl, GetParams with any crawl, a known URLItem, an AckMessage, a
/// BatchAck, a URLInfo with metadata (`tests/python.rs` builds the same in Python).
pub fn samples() -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        // GetParams: 1 varint 10, 2 varint 2, 3 "k", 4 varint 30, the oneof's crawlID (6) "c".
        (
            v2::GetParams {
                max_urls_per_queue: 10,
                max_queues: 2,
                key: "k".into(),
                delay_requestable: 30,
                item: Some(v2::get_params::Item::CrawlId("c".into())),
            }
            .encode_to_vec(),
            vec![
                0x08, 0x0a, 0x10, 0x02, 0x1a, 0x01, b'k', 0x20, 0x1e, 0x32, 0x01, b'c',
            ],
        ),
        // anyCrawlID (5): an empty message, present.
        (
            v2::GetParams {
                item: Some(v2::get_params::Item::AnyCrawlId(v2::AnyCrawlId {})),
                ..Default::default()
            }
            .encode_to_vec(),
            vec![0x2a, 0x00],
        ),
        // URLItem: known (2) { info (1) { url (1) "u" }, refetchable_from_date (2) 5 }, ID (3) "i".
        (
            v2::UrlItem {
                item: Some(v2::url_item::Item::Known(v2::KnownUrlItem {
                    info: Some(v2::UrlInfo {
                        url: "u".into(),
                        ..Default::default()
                    }),
                    refetchable_from_date: 5,
                })),
                id: "i".into(),
                creation_date: 0,
            }
            .encode_to_vec(),
            vec![
                0x12, 0x07, 0x0a, 0x03, 0x0a, 0x01, b'u', 0x10, 0x05, 0x1a, 0x01, b'i',
            ],
        ),
        // AckMessage: ID (1) "x", status (2) FAIL = 2.
        (
            v2::AckMessage {
                id: "x".into(),
                status: v2::ack_message::Status::Fail as i32,
            }
            .encode_to_vec(),
            vec![0x0a, 0x01, b'x', 0x10, 0x02],
        ),
        // BatchAck: ID (1) "b", statuses (2) packed [OK, SKIPPED, FAIL].
        (
            v2::BatchAck {
                id: "b".into(),
                statuses: vec![0, 1, 2],
            }
            .encode_to_vec(),
            vec![0x0a, 0x01, b'b', 0x12, 0x03, 0x00, 0x01, 0x02],
        ),
        // URLInfo's metadata: a map entry (3) { key (1) "m", value (2) StringList { "v" } }.
        (
            v2::UrlInfo {
                metadata: [(
                    "m".to_owned(),
                    v2::StringList {
                        values: vec!["v".into()],
                    },
                )]
                .into(),
                ..Default::default()
            }
            .encode_to_vec(),
            vec![0x1a, 0x08, 0x0a, 0x01, b'm', 0x12, 0x03, 0x0a, 0x01, b'v'],
        ),
    ]
}
