import ArgumentParser

/// A command that works on one store (`--store`, or `SYNC_STORE`): its errors name that store.
protocol StoreCommand: ParsableArguments {
    var store: StoreOptions { get }
}

extension Conflicts: StoreCommand {}
extension Encryption: StoreCommand {}
extension Exec: StoreCommand {}
extension Export: StoreCommand {}
extension Identity: StoreCommand {}
extension Import: StoreCommand {}
extension Init: StoreCommand {}
extension Log: StoreCommand {}
extension Migrate: StoreCommand {}
extension Peers.Add: StoreCommand {}
extension Peers.List: StoreCommand {}
extension Peers.Retire: StoreCommand {}
extension Peers.Remove: StoreCommand {}
extension Prune: StoreCommand {}
extension Pull: StoreCommand {}
extension Push: StoreCommand {}
extension Status: StoreCommand {}
extension TokenCommand: StoreCommand {}
extension Watch: StoreCommand {}
