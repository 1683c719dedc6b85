import Foundation

// tidemark-vectors: writes the change-bundle test vectors of Protocol/bundle.md §10.
//
//   tidemark-vectors [DIR]     write DIR (default Protocol/vectors), then check every vector
//                              against TidemarkCore in a child process and print a report
//   tidemark-vectors check F [--reencode]  decode F with TidemarkCore: "valid" and its JSON, or "invalid ..."
//   tidemark-vectors dump F    annotated hex listing of a well-formed bundle

func readFile(_ path: String) -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else {
        FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
        exit(2)
    }
    return Array(data)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "check" where arguments.count >= 2:
    SelfCheck.run(
        readFile(arguments[1]), keys: World().everyone, reencode: arguments.dropFirst(2).contains("--reencode"))
case "dump" where arguments.count == 2:
    print(Dump.annotate(readFile(arguments[1])), terminator: "")
case "-h", "--help", "help":
    print("usage: tidemark-vectors [DIR] | check FILE | dump FILE")
default:
    let root =
        arguments.first.map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Protocol/vectors")
    let world = World()
    let catalog = Catalog()
    do {
        try Output(root: root).write(catalog, world: world)
    } catch {
        FileHandle.standardError.write(Data("cannot write vectors: \(error)\n".utf8))
        exit(1)
    }
    let total = catalog.vectors.reduce(0) { $0 + $1.file.count }
    print("wrote \(catalog.vectors.count) vectors (\(total) bytes) to \(root.path)")
    let problems = Report.run(catalog, root: root)
    print(problems == 0 ? "TidemarkCore agrees with every vector" : "TidemarkCore disagrees with \(problems) vector(s)")
}
