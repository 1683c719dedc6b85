/// §5 signatures and chains: damaged files, and a hostile relay that re-signs what it altered.
extension Catalog {
    /// Long by design: the catalogue of signature and chain vectors, one entry each, in the order of the spec.
    mutating func addVerification() {
        let w = self.w
        let base = alice(1...3)
        let file = base.build(world: w).file

        // §5.1 the file signature, not re-signed.
        var bytes = file
        bytes[bytes.count - 1] ^= 0x01
        invalid(
            "flipped-bit-in-signature", "Bit 0 of the signature's last byte is flipped", flags: ["Signature"],
            error: "bad-signature",
            bytes: bytes)
        bytes = file
        bytes[bytes.count - 40] ^= 0x10
        invalid(
            "flipped-bit-in-signature-r", "A bit of the signature's R half is flipped", flags: ["Signature"],
            error: "bad-signature",
            bytes: bytes)
        bytes = file
        bytes[bytes.uniqueOffset(of: Wire.name("hello")) + 1] ^= 0x01
        invalid(
            "flipped-bit-in-records",
            "A bit of the TEXT 'hello' is flipped ('iello'): the chain and the file signature break",
            flags: ["Signature", "Chain"], error: "chain-mismatch", bytes: bytes)
        bytes = file
        bytes[bytes.uniqueOffset(of: Wire.name("alice")) + 5] ^= 0x01
        invalid(
            "flipped-bit-in-header", "A bit of the sender name is flipped ('alicd')", flags: ["Signature"],
            error: "bad-signature",
            bytes: bytes)
        bytes = file
        bytes[20] ^= 0x01
        invalid(
            "flipped-bit-in-sender-key", "A bit of the sender's public key in the preamble is flipped",
            flags: ["Signature"],
            error: "bad-signature", bytes: bytes)
        bytes = alice(1...3, compressed: true).build(world: w).file
        let records = FrameWalk.first(Frame.transactions, in: bytes)
        bytes[(records.bodyStart + records.end) / 2] ^= 0x04
        invalid(
            "flipped-bit-in-compressed-records", "A bit in the middle of a DEFLATE stream is flipped",
            flags: ["Signature", "Compression"],
            error: "bad-compression", bytes: bytes)
        var d = base
        d.signer = w.mallory
        invalid(
            "signed-by-other-key", "Signed by Mallory's key while the preamble names Alice's", flags: ["Signature"],
            error: "bad-signature",
            d)
        d = base
        d.editPreamble = { $0.replaceSubrange(12..<44, with: w.bob.publicKey) }
        d.signer = w.alice
        invalid(
            "sender-key-replaced", "Signed by Alice but the preamble names Bob's key", flags: ["Signature"],
            error: "bad-signature", d)
        addWeakKeys(base)
        bytes = file
        bytes.replaceSubrange((bytes.count - 64)..., with: Self.withUnreducedS(Array(bytes.suffix(64))))
        invalid(
            "signature-s-above-order",
            "The file signature's S is replaced by S + L (the same value modulo the group order), which a "
                + "verifier that skips RFC 8032's check S < L accepts",
            flags: ["Signature"], error: "bad-signature", bytes: bytes)

        // §5.2 sequence numbers and clocks, re-chained and re-attested by the origin.
        let flags = ["Chain", "Resigned"]
        func model(_ edit: (inout Draft) -> Void) -> Draft {
            var d = base
            edit(&d)
            return d
        }
        invalid(
            "sequence-gap", "Alice's range is #1-#3 but the records are #1 and #3", flags: flags, error: "sequence-gap",
            model { $0.transactions.remove(at: 1) })
        invalid(
            "reordered-transactions", "Alice's #2 comes before her #1", flags: flags, error: "sequence-gap",
            model { $0.transactions.swapAt(0, 1) })
        invalid(
            "replayed-transaction", "Alice's #1 appears twice", flags: flags, error: "sequence-gap",
            model { $0.transactions.insert($0.transactions[0], at: 1) })
        invalid(
            "sequence-beyond-range", "Alice's range ends at #2 but the records continue to #3", flags: flags,
            error: "outside-ranges",
            model { $0.ranges[0].last = 2 })
        invalid(
            "range-without-transactions", "Alice's range #1-#3 has no records at all", flags: flags,
            error: "range-incomplete",
            model { $0.editRecords = { $0 = [] } })
        invalid(
            "clock-not-increasing", "Alice's #2 has the same timestamp as her #1", flags: flags,
            error: "clock-not-increasing",
            model { $0.transactions[1].timestamp = $0.transactions[0].timestamp })
        invalid(
            "clock-decreasing", "Alice's #2 is timestamped one counter tick before her #1", flags: flags,
            error: "clock-not-increasing",
            model { $0.transactions[1].timestamp = $0.transactions[0].timestamp - 1 })
        invalid(
            "clock-zero", "Alice's #1 has timestamp 0", flags: flags, error: "clock-not-increasing",
            model { $0.transactions[0].timestamp = 0 })
        invalid(
            "clock-negative", "Alice's #1 has timestamp -1 (all 64 bits set)", flags: flags,
            error: "clock-not-increasing",
            model { $0.transactions[0].timestamp = -1 })
        var atMax = Draft(
            world: w, sender: w.alice, created: World.time(90), since: Token(entries: [(w.alice.id, Int64.max - 1)]),
            through: Token(entries: [(w.alice.id, Int64.max)]), tables: [World.notes], transactions: [])
        atMax.ranges = [
            OriginRange(
                publicKey: w.alice.publicKey, first: .max, last: .max,
                previous: Wire.sha256(Array("an earlier head".utf8)))
        ]
        invalid(
            "range-incomplete-at-max-sequence",
            "A range #(2^63-1)-#(2^63-1) without its transaction; the attestation is genuine",
            flags: flags + ["Limits"], error: "range-incomplete", atMax)

        // §5.2 attestations.
        invalid(
            "wrong-attestation-key", "Alice's attestation is signed by Mallory", flags: flags + ["Attestation"],
            error: "bad-attestation",
            model { d in
                d.editAttestations = { a in
                    a[0].signature = w.mallory.sign(
                        Wire.attestationMessage(origin: a[0].origin, sequence: a[0].sequence, head: a[0].head))
                }
            })
        invalid(
            "attestation-wrong-origin", "The attestation names Bob as origin in Alice's slot (signed by Bob)",
            flags: flags + ["Attestation"],
            error: "bad-attestation",
            model { d in
                d.editAttestations = { a in
                    a[0].origin = w.bob.id
                    a[0].signature = w.bob.sign(
                        Wire.attestationMessage(origin: w.bob.id, sequence: a[0].sequence, head: a[0].head))
                }
            })
        invalid(
            "attestation-wrong-sequence", "The attestation is for #2 while the range ends at #3 (signed by Alice)",
            flags: flags + ["Attestation"], error: "bad-attestation",
            model { d in
                d.editAttestations = { a in
                    a[0].sequence = 2
                    a[0].signature = w.alice.sign(
                        Wire.attestationMessage(origin: a[0].origin, sequence: 2, head: a[0].head))
                }
            })
        invalid(
            "attestation-wrong-head",
            "A genuine attestation of Alice's head after #2, relabelled as #3 and re-signed by Alice",
            flags: flags + ["Attestation"], error: "chain-mismatch",
            model { d in
                d.editAttestations = { a in
                    a[0].head = w.head(w.alice, through: 2)
                    a[0].signature = w.alice.sign(
                        Wire.attestationMessage(origin: a[0].origin, sequence: 3, head: a[0].head))
                }
            })
        invalid(
            "attestation-trailing-byte", "The ATTESTATION payload has one extra byte", flags: flags + ["Attestation"],
            error: "bad-attestation",
            model { d in d.editFrames = { f in f[f.count - 1].body.append(0) } })
        invalid(
            "attestation-sequence-zero", "The attestation's sequence number is 0", flags: flags + ["Attestation"],
            error: "bad-attestation",
            model { d in d.editAttestations = { a in a[0].sequence = 0 } })
        invalid(
            "attestation-non-minimal-varint",
            "The attestation's sequence number 3 is written as the two-byte varint 83 00: inside an ATTESTATION "
                + "payload that is R34, not R17",
            flags: flags + ["Attestation"], error: "bad-attestation",
            model { d in
                d.editFrames = { f in
                    let body = f[f.count - 1].body
                    precondition(body[16] == 0x03, "the attestation is for #3")
                    f[f.count - 1].body = Array(body[..<16]) + [0x83, 0x00] + Array(body[17...])
                }
            })
        invalid(
            "attestation-s-above-order",
            "The attestation's S is replaced by S + L (the same value modulo the group order), which a verifier "
                + "that skips RFC 8032's check S < L accepts",
            flags: flags + ["Attestation"], error: "bad-attestation",
            model { d in d.editAttestations = { a in a[0].signature = Self.withUnreducedS(a[0].signature) } })

        // A hostile relay: Carol alters what she relays and signs the file with her own key.
        let relayFlags = ["Chain", "Relay", "Resigned"]
        let aliceIndex = rangeIndex(relay(), w.alice)
        let bobIndex = rangeIndex(relay(), w.bob)
        func relayed(_ edit: (inout Draft) -> Void) -> Draft {
            var d = relay()
            edit(&d)
            // Carol cannot sign for Alice: Alice's attestation stays the genuine one of her #4
            // unless the edit chose another genuine one.
            return d
        }
        func keepGenuine(_ d: inout Draft, _ sequence: Int64) {
            let genuine = genuineAttestation(w.alice, sequence)
            d.editAttestations = { $0[aliceIndex] = genuine }
        }
        invalid(
            "dropped-middle-transaction", "Carol drops Alice's #3 and re-signs the file", flags: relayFlags,
            error: "sequence-gap",
            relayed { d in
                d.transactions.removeAll { $0.origin.name == "alice" && $0.sequence == 3 }
                keepGenuine(&d, 4)
            })
        invalid(
            "dropped-middle-renumbered",
            "Carol drops Alice's #3, renumbers #4 as #3 and presents Alice's genuine attestation of #3",
            flags: relayFlags, error: "chain-mismatch",
            relayed { d in
                d.transactions.removeAll { $0.origin.name == "alice" && $0.sequence == 3 }
                let i = d.transactions.firstIndex { $0.origin.name == "alice" && $0.sequence == 4 }!
                d.transactions[i].sequence = 3
                d.ranges[aliceIndex].last = 3
                keepGenuine(&d, 3)
            })
        invalid(
            "dropped-last-transaction", "Carol drops Alice's #4 but keeps the range #2-#4", flags: relayFlags,
            error: "range-incomplete",
            relayed { d in
                d.transactions.removeAll { $0.origin.name == "alice" && $0.sequence == 4 }
                keepGenuine(&d, 4)
            })
        invalid(
            "forged-origin", "Carol invents Alice's #5, extends the range and reuses Alice's signature of her #4 head",
            flags: relayFlags + ["Attestation"], error: "bad-attestation",
            relayed { d in
                d.transactions.append(
                    Transaction(
                        origin: w.alice, sequence: 5, timestamp: World.time(45), author: "alice", contextName: nil,
                        processID: nil,
                        changes: [
                            Change(
                                kind: .insert, table: "notes", key: [Column("id", .integer(666))],
                                columns: [Column("title", .text("forged"))])
                        ]))
                d.ranges[aliceIndex].last = 5
                let old = genuineAttestation(w.alice, 4)
                d.editAttestations = { a in
                    a[aliceIndex].sequence = 5
                    a[aliceIndex].signature = old.signature
                }
            })
        invalid(
            "forged-origin-relay-attests", "Carol invents Alice's #5 and signs Alice's attestation with her own key",
            flags: relayFlags + ["Attestation"], error: "bad-attestation",
            relayed { d in
                d.transactions.append(
                    Transaction(
                        origin: w.alice, sequence: 5, timestamp: World.time(45), author: "alice", contextName: nil,
                        processID: nil,
                        changes: [
                            Change(
                                kind: .insert, table: "notes", key: [Column("id", .integer(666))],
                                columns: [Column("title", .text("forged"))])
                        ]))
                d.ranges[aliceIndex].last = 5
                d.editAttestations = { a in
                    a[aliceIndex].signature = w.carol.sign(
                        Wire.attestationMessage(origin: w.alice.id, sequence: 5, head: a[aliceIndex].head))
                }
            })
        invalid(
            "forged-origin-outside-ranges", "Carol slips in a transaction of Mallory, who has no range",
            flags: relayFlags,
            error: "outside-ranges",
            relayed { d in
                d.transactions.insert(
                    Transaction(
                        origin: w.mallory, sequence: 1, timestamp: World.time(13), author: nil, contextName: nil,
                        processID: nil,
                        changes: [Change(kind: .delete, table: "notes", key: [Column("id", .integer(1))], columns: [])]),
                    at: 3)
            })
        invalid(
            "tampered-relayed-change", "Carol changes Bob's title 'from bob' to 'from rob' and re-signs the file",
            flags: relayFlags,
            error: "chain-mismatch",
            relayed { d in d.tamperStream = { $0.replaceUnique(Wire.name("from bob"), with: Wire.name("from rob")) } })
        invalid(
            "relay-attests-for-origin", "Carol signs Bob's attestation herself (over the correct head)",
            flags: relayFlags + ["Attestation"],
            error: "bad-attestation",
            relayed { d in
                d.editAttestations = { a in
                    a[bobIndex].signature = w.carol.sign(
                        Wire.attestationMessage(
                            origin: a[bobIndex].origin, sequence: a[bobIndex].sequence, head: a[bobIndex].head))
                }
            })
        invalid(
            "attestations-out-of-order", "The ATTESTATION frames are not in the header's range order",
            flags: relayFlags + ["Attestation"],
            error: "bad-attestation", relayed { d in d.editAttestations = { $0.swapAt(0, 1) } })
        invalid(
            "range-previous-wrong",
            "Alice's #3 sent with `previous` = her head after #1 (not #2) and her genuine attestation of #3",
            flags: relayFlags, error: "chain-mismatch",
            {
                var d = alice(3...3)
                d.ranges[0].previous = w.head(w.alice, through: 1)
                let genuine = genuineAttestation(w.alice, 3)
                d.editAttestations = { $0[0] = genuine }
                return d
            }())
        invalid(
            "range-key-replaced", "Alice's range lists Mallory's public key; the records name Alice", flags: flags,
            error: "outside-ranges",
            model {
                $0.ranges[0].publicKey = w.mallory.publicKey
                $0.ranges[0].previous = Wire.genesis(w.mallory.id)
            })
    }
}

/// §5.1, §5.2 and §9: keys a reader refuses although a lenient verifier accepts signatures under them.
extension Catalog {
    /// The encodings of the identity point (y = 1): the canonical one, one with y = p + 1, and one
    /// with x = 0 and the sign bit set. Under any of them the signature R = identity, S = 0 verifies
    /// for every message in a cofactorless verifier that does not refuse the key: anyone can forge it.
    static let weakKeys: [(name: String, comment: String, key: [UInt8])] = [
        ("small-order", "the identity point, of order 1", [1] + [UInt8](repeating: 0, count: 31)),
        (
            "non-canonical", "y = p + 1, a non-canonical encoding of the identity",
            [0xee] + [UInt8](repeating: 0xff, count: 30) + [0x7f]
        ),
        (
            "negative-zero", "y = 1 with the sign bit set, though x = 0",
            [1] + [UInt8](repeating: 0, count: 30) + [0x80]
        ),
    ]

    /// The order L of Ed25519's base point, 2^252 + 27742317777372353535851937790883648493,
    /// little-endian (RFC 8032 §5.1).
    static let groupOrder: [UInt8] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ]

    /// `signature` (R, S) with S replaced by S + L: a signature equal modulo L, and so accepted by a
    /// verifier that skips RFC 8032 §5.1.7's check S < L. S < L < 2^253, so S + L fits 32 bytes.
    static func withUnreducedS(_ signature: [UInt8]) -> [UInt8] {
        var s = Array(signature[32..<64])
        var carry = 0
        for i in s.indices {
            let sum = Int(s[i]) + Int(groupOrder[i]) + carry
            s[i] = UInt8(sum & 0xff)
            carry = sum >> 8
        }
        precondition(carry == 0)
        return Array(signature[..<32]) + s
    }

    /// A signature anyone can make under a weak key: R = the identity's encoding, S = 0.
    static let forgedSignature: [UInt8] = [1] + [UInt8](repeating: 0, count: 63)

    mutating func addWeakKeys(_ base: Draft) {
        for weak in Self.weakKeys {
            var d = base
            d.editPreamble = { $0.replaceSubrange(12..<44, with: weak.key) }
            d.editFile = { $0.replaceSubrange(($0.count - 64)..., with: Self.forgedSignature) }
            invalid(
                "sender-key-\(weak.name)",
                "The preamble's key is \(weak.comment); the file signature (R = identity, S = 0) verifies under "
                    + "it for any message in a verifier that accepts the key",
                flags: ["Signature", "WeakKey"], error: "bad-signature", d)
        }
        // A range whose origin key is the identity point: its chain is sound and its attestation forged.
        var d = base
        let weak = Self.weakKeys[0].key
        let origin = Array(Wire.sha256(weak).prefix(16))
        let real = d.ranges[0].origin
        d.ranges[0].publicKey = weak
        d.ranges[0].previous = Wire.genesis(origin)
        d.editRecords = { records in
            for i in records.indices where Array(records[i].prefix(16)) == real {
                records[i].replaceSubrange(0..<16, with: origin)
            }
        }
        d.editAttestations = { a in a[0].signature = Self.forgedSignature }
        invalid(
            "range-key-small-order",
            "A range's origin key is the identity point; its attestation (R = identity, S = 0) verifies under it "
                + "in a verifier that accepts the key",
            flags: ["Attestation", "Resigned", "WeakKey"], error: "bad-attestation", d)
    }
}
