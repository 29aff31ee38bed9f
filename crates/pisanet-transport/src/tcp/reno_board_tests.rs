use super::*;

const MSS: u64 = 1000;

/// A board with `n` full segments sent from 0.
fn sent(n: u64) -> RenoBoard {
    let mut b = RenoBoard::default();
    for i in 0..n {
        b.on_send(i * MSS, MSS);
    }
    b
}

#[test]
fn new_segments_are_in_flight_and_nothing_is_lost() {
    let b = sent(5);
    assert_eq!(b.bytes_in_flight(), 5 * MSS);
    assert_eq!(b.next_lost(), None);
    // Nothing SACKed: IsLost is false everywhere.
    assert!(!b.is_lost(0));
}

#[test]
fn duplicate_acks_mark_segments_after_the_head_sacked() {
    let mut b = sent(5);
    b.add_reno_sack();
    b.add_reno_sack();
    // Segments 1 and 2 (never the head) are marked: the pipe drops by two.
    assert_eq!(b.sacked_bytes(), 2 * MSS);
    assert_eq!(b.bytes_in_flight(), 3 * MSS);
    assert!(b.items()[1].sacked && b.items()[2].sacked && !b.items()[0].sacked);
    // The head is not lost until marked so.
    assert!(!b.is_lost(0));
    b.mark_head_as_lost();
    assert!(b.is_lost(0));
    assert_eq!(b.next_lost(), Some((0, MSS)));
    assert_eq!(b.bytes_in_flight(), 2 * MSS);
    // Resending it puts it back in flight, lost flag and all (ns-3).
    b.on_send(0, MSS);
    assert_eq!(b.bytes_in_flight(), 3 * MSS);
    assert_eq!(b.next_lost(), None);
    assert!(b.is_head_retransmitted());
    assert!(b.is_retransmitted_data_acked(MSS));
    // Marks run out at the end of the sent list.
    for _ in 0..10 {
        b.add_reno_sack();
    }
    assert_eq!(b.sacked_bytes(), 4 * MSS);
}

#[test]
fn a_timeout_marks_every_segment_lost_and_resends_them_in_order() {
    let mut b = sent(4);
    b.add_reno_sack();
    b.reset_reno_sack();
    b.set_sent_list_lost();
    assert_eq!(b.sacked_bytes(), 0);
    assert_eq!(b.lost_bytes(), 4 * MSS);
    assert_eq!(b.bytes_in_flight(), 0);
    // Oldest first; each resend adds one segment to the pipe.
    for i in 0..4 {
        assert_eq!(b.next_lost(), Some((i * MSS, (i + 1) * MSS)));
        b.on_send(i * MSS, MSS);
        assert_eq!(b.bytes_in_flight(), (i + 1) * MSS);
    }
    assert_eq!(b.next_lost(), None);
    // A cumulative ACK of three segments takes their flags with them.
    b.discard_up_to(3 * MSS);
    assert_eq!(b.lost_bytes(), MSS);
    assert_eq!(b.bytes_in_flight(), MSS);
}

#[test]
fn a_mark_left_at_the_head_moves_on_and_the_head_is_lost() {
    let mut b = sent(6);
    // Three duplicate ACKs' marks on segments 1-3.
    for _ in 0..3 {
        b.add_reno_sack();
    }
    // An ACK of segment 0 makes marked segment 1 the head: the mark moves
    // to segment 4 and segment 1 is marked lost (`DiscardUpTo`).
    b.discard_up_to(MSS);
    let it = b.items();
    assert_eq!(it[0].start, MSS);
    assert!(!it[0].sacked && it[0].lost);
    assert!(it[1].sacked && it[2].sacked && it[3].sacked && !it[4].sacked);
    assert_eq!(b.sacked_bytes(), 3 * MSS);
    // So the next send resends it, and IsLost(HighACK + 1) holds: one
    // duplicate ACK is enough to start recovery.
    assert_eq!(b.next_lost(), Some((MSS, 2 * MSS)));
    assert!(b.is_lost(MSS));
    // An ACK past every mark forgets the highest SACK point.
    b.discard_up_to(6 * MSS);
    assert!(b.items().is_empty());
    assert_eq!(b.bytes_in_flight(), 0);
    assert!(!b.is_lost(6 * MSS));
}

#[test]
fn a_partial_ack_inside_a_segment_trims_it() {
    let mut b = sent(2);
    b.mark_head_as_lost();
    b.discard_up_to(MSS / 2);
    assert_eq!(b.items()[0].start, MSS / 2);
    assert_eq!(b.lost_bytes(), MSS / 2);
    assert_eq!(b.bytes_in_flight(), MSS);
}
