import ArgumentParser

/// A command that works on one store (`--store`, or `SYNC_STORE`): its errors name that store.
protocol StoreCommand: ParsableArguments {
    var store: StoreOptions { get }
}

extension SyncCLI.Conflicts: StoreCommand {}
extension SyncCLI.Encryption: StoreCommand {}
extension SyncCLI.Exec: StoreCommand {}
extension SyncCLI.Export: StoreCommand {}
extension SyncCLI.Identity: StoreCommand {}
extension SyncCLI.Import: StoreCommand {}
extension SyncCLI.Init: StoreCommand {}
extension SyncCLI.Log: StoreCommand {}
extension SyncCLI.Migrate: StoreCommand {}
extension SyncCLI.Peers.Add: StoreCommand {}
extension SyncCLI.Peers.List: StoreCommand {}
extension SyncCLI.Peers.Retire: StoreCommand {}
extension SyncCLI.Peers.Remove: StoreCommand {}
extension SyncCLI.Prune: StoreCommand {}
extension SyncCLI.Pull: StoreCommand {}
extension SyncCLI.Push: StoreCommand {}
extension SyncCLI.Status: StoreCommand {}
extension SyncCLI.Token: StoreCommand {}
extension SyncCLI.Watch: StoreCommand {}
