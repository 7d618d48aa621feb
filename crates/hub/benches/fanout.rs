//! Hub fan-out: one publish to a room of 1,000 members, reported as
//! messages delivered per second. Each iteration also drains the queues, as
//! the members' writers would, so the queues stay in their steady state.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hub::{Hub, Member, Outbox, Payload};

const MEMBERS: u64 = 1_000;

fn fanout(c: &mut Criterion) {
    let hub = Hub::new(16);
    let outboxes: Vec<Arc<Outbox>> = (0..MEMBERS)
        .map(|id| {
            let outbox = Arc::new(Outbox::new(1 << 20));
            hub.join("room", Member { id, name: None, outbox: outbox.clone(), speaks: hub::Speaks::App }, 0)
                .expect("anonymous members always join");
            outbox
        })
        .collect();
    let payload = Payload::new("x".repeat(64));
    let mut sink = Vec::with_capacity(16);

    let mut group = c.benchmark_group("hub");
    group.throughput(Throughput::Elements(MEMBERS));
    group.bench_function("publish_to_1000_members", |b| {
        b.iter(|| {
            let delivery = hub.publish("room", &payload);
            assert_eq!(delivery.delivered, MEMBERS as usize);
            for outbox in &outboxes {
                outbox.try_drain(&mut sink);
                sink.clear();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
