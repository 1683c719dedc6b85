import Crypto
import TidemarkCore

/// Feeds one input to the bundle decoder and verifier the way `Store.importBundle` and
/// `Store.inspectBundle` do, and checks what holds of every bundle that verifies. An input that
/// starts as an age file is opened first with `FuzzIdentity`, as an import opens an encrypted
/// exchange file (Protocol/encryption.md §3, §5).
enum BundleFuzzing {
    /// How far an input got.
    enum Outcome: Equatable {
        /// The decoder refused it with a `BundleError`, as it must refuse any bad input.
        case rejected(BundleError)
        /// The envelope refused it with an `EnvelopeError`: not for this identity, altered, truncated.
        case unopened(EnvelopeError)
        /// It verified: the signature, every chain and attestation, and the framing are intact.
        case verified(VerifiedBundle)
    }

    /// Decodes and verifies `bytes`; traps (so that libFuzzer reports the input) if the decoder
    /// throws anything but a `BundleError` or a verified bundle breaks an invariant of §5.
    @discardableResult
    static func run(_ bytes: [UInt8]) -> Outcome {
        let outcome: Outcome
        do {
            outcome = .verified(try decodeAndVerify(bytes))
        } catch let error as BundleError {
            outcome = .rejected(error)
        } catch let error as EnvelopeError {
            outcome = .unopened(error)
        } catch {
            fatalError("the decoder threw \(type(of: error)), not a BundleError or EnvelopeError: \(error)")
        }
        if case .verified(let bundle) = outcome { checkInvariants(bundle) }
        return outcome
    }

    /// Import's order of work (Protocol/exchange.md §4): header, trust, every record, then
    /// `finish()`. A bundle from a sender or origin outside `TrustedKeys` is read the way
    /// `sync inspect` reads it instead — record by record — so that no input stops at the trust check.
    private static func decodeAndVerify(_ bytes: [UInt8]) throws -> VerifiedBundle {
        let decoder =
            Envelope.isEncrypted(bytes)
            ? try BundleDecoder(EnvelopeReader(BufferSource(bytes), identity: FuzzIdentity.key))
            : try BundleDecoder(BufferSource(bytes))
        let importable = decoder.header.kind != .watermark && TrustedKeys.admit(decoder)
        if importable {
            try decoder.skipRecords()
        } else {
            switch decoder.header.kind {
            case .snapshot:
                while let state = try decoder.nextRowState() {
                    precondition(!state.key.isEmpty, "a row state without key")
                }
            case .changes, .watermark:
                while let head = try decoder.nextTransaction() {
                    var changes = 0
                    while try decoder.nextChange() != nil { changes += 1 }
                    precondition(
                        changes == head.changeCount,
                        "a transaction yielded \(changes) of its \(head.changeCount) changes")
                }
            }
        }
        return try decoder.finish()
    }

    /// What §5.2 guarantees of a verified bundle: exactly the declared ranges' transactions, one
    /// attestation per range, and nothing for kinds that carry no transactions.
    private static func checkInvariants(_ bundle: VerifiedBundle) {
        let declared = bundle.header.ranges.reduce(0) { $0 + Int($1.last - $1.first + 1) }
        precondition(
            bundle.transactionCount == declared,
            "verified \(bundle.transactionCount) transactions, ranges declare \(declared)")
        precondition(bundle.attestations.count == bundle.header.ranges.count, "attestations do not match ranges")
        for (range, attestation) in zip(bundle.header.ranges, bundle.attestations) {
            precondition(
                attestation.origin == range.origin && attestation.sequence == range.last,
                "attestation for another range")
        }
        if bundle.header.kind == .watermark { precondition(bundle.changeCount == 0, "a watermark with records") }
    }
}
