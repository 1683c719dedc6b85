import Foundation
import SyncCommands

exit(await SyncCLI.run(Array(CommandLine.arguments.dropFirst())))
