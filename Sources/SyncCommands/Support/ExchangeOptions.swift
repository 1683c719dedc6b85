import ArgumentParser
import Tidemark

/// How `push`, `pull` and `prune` reach an exchange folder on a WebDAV server. Credentials are
/// never options: they come from the netrc file (`$NETRC`, or `~/.netrc`), as curl and git read it.
struct ExchangeOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A PEM file of certificate authorities to trust for https:// exchange folders, beside the system's.",
            valueName: "file"))
    var caFile: String?

    @Flag(
        help:
            "Allow an http:// exchange folder on a host other than this machine (passwords and files cross the network in clear)."
    )
    var insecureHTTP = false

    var settings: ExchangeSettings { ExchangeSettings(caFile: caFile, allowInsecureHTTP: insecureHTTP) }
}
