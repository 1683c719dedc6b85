import Foundation
import Testing
import TidemarkCore

/// The regression vectors of `Protocol/vectors/fuzz/`: inputs the libFuzzer campaigns
/// (`tools/fuzz.sh`) reported as a crash, hang or out-of-memory. Each must be refused with exactly
/// the `BundleError` its manifest records, within a time bound. Like `BundleVectorTests`, each runs
/// in a child process, so a decoder that crashes on one fails that vector alone.
@Suite struct FuzzVectorTests {
    /// How long refusing one of these inputs may take: they are a few kilobytes at most.
    static let timeBound: Duration = .seconds(5)

    // A hang guard, not a timing check (`timeBound` is that): the limit counts from when a case is
    // started, and the rest of the suite runs beside it on two cores. 15 minutes, as the other hang
    // guards allow.
    @Test(.timeLimit(.minutes(15)), arguments: FuzzVectors.manifest.tests)
    func fuzzVector(_ test: FuzzVectors.Test) async {
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardErrorContent], "\(test): the decoder crashed"
        ) { [tcId = test.tcId as Int] in
            let test = FuzzVectors.manifest.tests.first { $0.tcId == tcId }!
            if let problem = FuzzVectors.check(test) {
                FileHandle.standardError.write(Data((Vectors.problemMarker + problem + "\n").utf8))
            }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        if let range = stderr.range(of: Vectors.problemMarker) {
            Issue.record("\(test): \(stderr[range.upperBound...].prefix(3000))")
        }
    }

    @Test func theFuzzManifestListsEveryFileAndNamesRulesOfTheSpecification() throws {
        let folder = Vectors.root.appendingPathComponent("fuzz")
        let present = Set(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".tmb") })
        let listed = FuzzVectors.manifest.tests.map(\.file)
        #expect(Set(listed) == present)
        #expect(Set(listed).count == listed.count, "files are listed once")
        #expect(Set(FuzzVectors.manifest.tests.map(\.tcId)).count == listed.count, "tcIds are unique")
        #expect(FuzzVectors.manifest.algorithm == "tidemark-bundle-v1")
        let spec = try String(
            contentsOf: Vectors.root.appendingPathComponent("../bundle.md").standardizedFileURL, encoding: .utf8)
        for test in FuzzVectors.manifest.tests {
            #expect(test.result == "invalid", "\(test): fuzz vectors are all must-reject")
            #expect(spec.contains("| `\(test.error)` |"), "\(test): \(test.error) is not a rule of bundle.md §7")
        }
    }
}

/// `Protocol/vectors/fuzz/manifest.json` and how a vector of it is checked.
enum FuzzVectors {
    struct Manifest: Decodable, Sendable {
        var algorithm: String
        var tests: [Test]
    }

    struct Test: Decodable, Sendable, CustomTestStringConvertible, CustomStringConvertible {
        var tcId: Int
        var file: String
        var found: String
        var comment: String
        var result: String
        /// The rule of bundle.md §7 met first.
        var error: String
        /// `BundleError.description` as TidemarkCore refuses it.
        var decoderError: String
        var description: String { "fuzz #\(tcId) \(file)" }
        var testDescription: String { "fuzz #\(tcId) \(file): \(comment.prefix(120))" }
    }

    static let manifest: Manifest = {
        let data = try! Data(contentsOf: Vectors.root.appendingPathComponent("fuzz/manifest.json"))
        return try! JSONDecoder().decode(Manifest.self, from: data)
    }()

    /// Nil if the decoder refuses the vector as its manifest says, promptly; otherwise what went wrong.
    static func check(_ test: Test) -> String? {
        let file = Vectors.bytes("fuzz/" + test.file)
        let started = ContinuousClock.now
        let outcome: String
        do {
            _ = try DecodedBundle(decoding: file)
            return "a fuzz vector (\(test.error)) was accepted"
        } catch let error as BundleError {
            guard error.rule.rawValue == test.error else {
                return "refused under \(error.rule), not \(test.error) as the manifest says: \(error)"
            }
            outcome = error.description
        } catch {
            return "the decoder threw a \(type(of: error)), not a BundleError: \(error)"
        }
        let elapsed = ContinuousClock.now - started
        if elapsed > FuzzVectorTests.timeBound {
            return "refusing it took \(elapsed), more than \(FuzzVectorTests.timeBound)"
        }
        return outcome == test.decoderError
            ? nil : "refused with \"\(outcome)\", the manifest says \"\(test.decoderError)\""
    }
}
