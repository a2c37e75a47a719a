/// One landmark as stored: the fields of Apple's `landmarkData.json` plus the keys this catalog did not
/// recognise (kept, and written back on output).
///
/// `Codable` in the `landmarkData.json` shape: see `App/ModelCoding.swift`. Every field is listed once,
/// in `LandmarkColumn`'s table of fields, which the row decoder, `==`, `hash` and `Codable` walk: a new
/// field is a migration, a case there and a property here (docs/architecture.md §5.5).
public struct Landmark: Sendable, Hashable, Identifiable {
    /// The record's `id`: the key of upserts and merges (names may repeat).
    public var id: Int64
    /// Never empty.
    public var name: String
    public var category: String?
    public var city: String?
    public var state: String?
    public var park: String?
    public var description: String?
    public var imageName: String?
    /// On the carousel (the featured pages, in id order).
    public var isFeatured: Bool
    public var isFavorite: Bool
    /// Degrees, −90…90 (WGS 84, as in the tutorial's data).
    public var latitude: Double
    /// Degrees, −180…180.
    public var longitude: Double
    /// Unknown keys, as a compact JSON object text in file order (`{"url":"…"}`), or nil.
    public var extraJSON: String?

    public init(
        id: Int64, name: String, category: String? = nil, city: String? = nil, state: String? = nil,
        park: String? = nil, description: String? = nil, imageName: String? = nil,
        isFeatured: Bool = false, isFavorite: Bool = false, latitude: Double, longitude: Double,
        extraJSON: String? = nil
    ) {
        self.id = id
        self.name = name
        self.category = category
        self.city = city
        self.state = state
        self.park = park
        self.description = description
        self.imageName = imageName
        self.isFeatured = isFeatured
        self.isFavorite = isFavorite
        self.latitude = latitude
        self.longitude = longitude
        self.extraJSON = extraJSON
    }

    /// The landmark `fields` hold (a row, a decoded record, another value), read column by column
    /// through the table of fields (``LandmarkColumn/field``): the one decoder of every landmark shape.
    init<F: LandmarkFields>(fields f: F) {
        self.init(id: 0, name: "", latitude: 0, longitude: 0)
        for column in LandmarkColumn.contentColumns {
            switch column.field {
            case .id(let p): self[keyPath: p] = f.int(column)
            case .requiredText(let p): self[keyPath: p] = f.string(column) ?? ""
            case .text(let p), .extra(let p): self[keyPath: p] = f.string(column)
            case .bool(let p): self[keyPath: p] = f.int(column) != 0
            case .int(let p): self[keyPath: p] = Int(f.int(column))
            case .optionalInt(let p): self[keyPath: p] = f.isNull(column) ? nil : Int(f.int(column))
            case .double(let p), .coordinate(let p, _): self[keyPath: p] = f.double(column)
            case .optionalDouble(let p): self[keyPath: p] = f.isNull(column) ? nil : f.double(column)
            case .stamp: continue
            }
        }
    }

    /// The landmark in the current row of `s`, which selects `LandmarkColumn.selectList`.
    init(row s: Statement) { self.init(fields: LandmarkRow(statement: s)) }
}
