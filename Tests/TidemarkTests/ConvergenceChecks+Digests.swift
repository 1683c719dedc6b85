import Tidemark
import TidemarkTestSupport

extension ConvergenceChecks {
    /// Row digests (Protocol/exchange.md §8): each replica's, kept up to date write by write, is
    /// what its rows give counted from scratch, and all are equal.
    func digestProblems() throws -> [String] {
        var problems: [String] = []
        let digests = try cluster.replicas.map { try $0.store.rowDigest().digest }
        for (replica, kept) in zip(cluster.replicas, digests) {
            let counted = try replica.tables().rowDigest
            if kept != counted {
                problems.append(
                    "\(replica.name): row digest differs from its rows in \(kept.differingTables(from: counted))")
            }
            if kept != digests[0] {
                problems.append(
                    "\(replica.name): row digest differs from r0's in \(kept.differingTables(from: digests[0]))")
            }
        }
        return problems
    }
}
