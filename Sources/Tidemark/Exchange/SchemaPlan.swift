import TidemarkCore

/// What an import does about the schema versions a bundle needs.
enum SchemaPlan {
    /// The store has them all.
    case apply
    /// The store lacks these, but its tables already have what they change: take them on, with
    /// these registrations (which know the columns and tables the versions dropped), then apply.
    case adopt([Schema.Version], registrations: [TrackedTable])
    /// The store lacks this version (the newest needed): keep the bundle until it has it.
    case hold(Schema.Version)
}
