import TidemarkCore

/// A bundle file opened for import: its source, a decoder that has read the header, and what the
/// import does about the schema versions it needs.
final class OpenedBundle {
    let source: ExchangeSource
    let decoder: BundleDecoder
    var plan = SchemaPlan.apply

    /// Reads the header of the bundle `source` reads; a watermark is refused.
    init(source: ExchangeSource, path: String) throws {
        self.source = source
        do {
            decoder = try BundleDecoder(source)
        } catch let error as BundleError {
            throw ExchangeError.badBundle(path: path, error)
        }
        guard decoder.header.kind != .watermark else {
            throw ExchangeError.notImportable(path: path, kind: "a watermark")
        }
    }
}
