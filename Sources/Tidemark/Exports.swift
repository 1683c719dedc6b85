@_exported import TidemarkCore
