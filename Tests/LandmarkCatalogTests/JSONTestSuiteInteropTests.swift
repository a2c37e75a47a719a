import CatalogTestSupport
import Foundation
import Testing

@testable import LandmarkCatalog
@testable import LandmarkCatalogSync

/// The `test_parsing` files of nst/JSONTestSuite (see `../shared/fixtures/jsontestsuite/README.md`):
/// `y_` must be accepted, `n_` refused (in lenient mode three trailing-comma files excepted), and each
/// `i_` file gets the outcome decided in ``implementationDefined``.
@Suite("JSONTestSuite interop (../shared/fixtures/jsontestsuite)")
struct JSONTestSuiteInteropTests {
    static let directory = JSONTestSupport.sharedFixtures("jsontestsuite")
    static let files = JSONTestSupport.jsonFiles(in: directory)
    static let skipNote: Comment = "../shared/fixtures/jsontestsuite not found"

    /// Whether the fixtures are there; when they are not, says so once in the log as well as in the report.
    static let present: Bool = {
        if directory == nil { print("skipped: ../shared/fixtures/jsontestsuite not found") }
        return directory != nil
    }()

    /// The `n_` files that lenient mode accepts, each with one trailing-comma warning (docs/cli.md §2).
    static let lenientlyAccepted: Set<String> = [
        "n_array_extra_comma.json", "n_array_number_and_comma.json", "n_object_trailing_comma.json",
    ]

    enum Outcome: Sendable {
        /// Accepted in both modes; the check looks at the value.
        case accept(@Sendable (JSONValue) -> Bool)
        /// Refused in both modes with a message containing this text.
        case reject(String)
    }

    /// The first element of a one-element array, as a number.
    static func onlyNumber(_ value: JSONValue) -> JSONNumber? {
        if case .array(let elements) = value, elements.count == 1, case .number(let number) = elements[0] { return number }
        return nil
    }

    /// Our decision for every implementation-defined (`i_`) file.
    ///
    /// - numbers of any size are accepted as numbers (RFC 8259 §6 sets no range): integers beyond Int64 get
    ///   `int64Value` nil, overflowing exponents give a `doubleValue` of ±infinity, underflowing ones ±0;
    /// - lone or reversed surrogate escapes are refused: they name no Unicode scalar, and a Swift String
    ///   cannot hold them;
    /// - invalid UTF-8 (overlong, surrogates, above U+10FFFF, truncated, Latin-1) is refused;
    /// - UTF-16 input, with or without a byte order mark, is refused; a UTF-8 byte order mark is skipped;
    /// - 500 nested arrays are accepted (maxDepth is 512).
    static let implementationDefined: [String: Outcome] = [
        "i_number_double_huge_neg_exp.json": .accept { onlyNumber($0)?.doubleValue == 0 },
        "i_number_huge_exp.json": .accept { onlyNumber($0)?.doubleValue == .infinity },
        "i_number_neg_int_huge_exp.json": .accept { onlyNumber($0)?.doubleValue == -.infinity },
        "i_number_pos_double_huge_exp.json": .accept { onlyNumber($0)?.doubleValue == .infinity },
        "i_number_real_neg_overflow.json": .accept { onlyNumber($0)?.doubleValue == -.infinity },
        "i_number_real_pos_overflow.json": .accept { onlyNumber($0)?.doubleValue == .infinity },
        "i_number_real_underflow.json": .accept { onlyNumber($0)?.doubleValue == 0 },
        "i_number_too_big_neg_int.json": .accept {
            guard let number = onlyNumber($0) else { return false }
            return number.int64Value == nil && number.doubleValue == -123123123123123123123123123123.0
        },
        "i_number_too_big_pos_int.json": .accept {
            guard let number = onlyNumber($0) else { return false }
            return number.int64Value == nil && number.doubleValue == 1e20
        },
        "i_number_very_big_negative_int.json": .accept {
            guard let number = onlyNumber($0) else { return false }
            return number.int64Value == nil && number.doubleValue == -237462374673276894279832749832423479823246327846.0
        },
        "i_object_key_lone_2nd_surrogate.json": .reject("lone surrogate"),
        "i_string_1st_surrogate_but_2nd_missing.json": .reject("lone surrogate"),
        "i_string_1st_valid_surrogate_2nd_invalid.json": .reject("lone surrogate"),
        "i_string_UTF-16LE_with_BOM.json": .reject("input is UTF-16"),
        "i_string_UTF-8_invalid_sequence.json": .reject("invalid UTF-8"),
        "i_string_UTF8_surrogate_U+D800.json": .reject("invalid UTF-8"),
        "i_string_incomplete_surrogate_and_escape_valid.json": .reject("lone surrogate"),
        "i_string_incomplete_surrogate_pair.json": .reject("lone surrogate"),
        "i_string_incomplete_surrogates_escape_valid.json": .reject("lone surrogate"),
        "i_string_invalid_lonely_surrogate.json": .reject("lone surrogate"),
        "i_string_invalid_surrogate.json": .reject("lone surrogate"),
        "i_string_invalid_utf-8.json": .reject("invalid UTF-8"),
        "i_string_inverted_surrogates_U+1D11E.json": .reject("lone surrogate"),
        "i_string_iso_latin_1.json": .reject("invalid UTF-8"),
        "i_string_lone_second_surrogate.json": .reject("lone surrogate"),
        "i_string_lone_utf8_continuation_byte.json": .reject("invalid UTF-8"),
        "i_string_not_in_unicode_range.json": .reject("invalid UTF-8"),
        "i_string_overlong_sequence_2_bytes.json": .reject("invalid UTF-8"),
        "i_string_overlong_sequence_6_bytes.json": .reject("invalid UTF-8"),
        "i_string_overlong_sequence_6_bytes_null.json": .reject("invalid UTF-8"),
        "i_string_truncated-utf-8.json": .reject("invalid UTF-8"),
        "i_string_utf16BE_no_BOM.json": .reject("input is UTF-16"),
        "i_string_utf16LE_no_BOM.json": .reject("input is UTF-16"),
        "i_structure_500_nested_arrays.json": .accept {
            var value = $0
            var depth = 0
            while case .array(let elements) = value {
                depth += 1
                guard let first = elements.first else { break }
                value = first
            }
            return depth == 500
        },
        "i_structure_UTF-8_BOM_empty_object.json": .accept { $0 == .object([]) },
    ]

    @Test(
        "each file gets the outcome its prefix or our table gives",
        .enabled(if: present, skipNote),
        arguments: files)
    func file(_ name: String) throws {
        let bytes = try JSONTestSupport.bytes(of: try #require(JSONTestSuiteInteropTests.directory).appendingPathComponent(name))
        let strict = JSONTestSupport.parse(bytes, JSONTestSupport.strict)
        let lenient = JSONTestSupport.parse(bytes, JSONTestSupport.lenient)
        // Every error and warning has an in-range position consistent with the bytes.
        #expect(JSONTestSupport.positionProblems(bytes, strict).isEmpty, "\(JSONTestSupport.positionProblems(bytes, strict))")
        #expect(JSONTestSupport.positionProblems(bytes, lenient).isEmpty, "\(JSONTestSupport.positionProblems(bytes, lenient))")

        switch name.prefix(2) {
        case "y_":
            let value = try strict.get().value
            let parsed = try lenient.get()
            #expect(parsed.value == value)
            #expect(parsed.warnings.isEmpty)
        case "n_":
            guard case .failure(let error) = strict else {
                Issue.record("strict mode accepted \(name)")
                return
            }
            #expect(error is JSONSyntaxError, "\(error)")
            if JSONTestSuiteInteropTests.lenientlyAccepted.contains(name) {
                let parsed = try lenient.get()
                #expect(parsed.warnings.count == 1)
                #expect(parsed.warnings.first?.message.hasPrefix("trailing comma before") == true)
                #expect((error as? JSONSyntaxError)?.message.contains("trailing comma at \(parsed.warnings[0].position)") == true)
            } else {
                guard case .failure(let lenientError) = lenient else {
                    Issue.record("lenient mode accepted \(name)")
                    return
                }
                #expect(lenientError is JSONSyntaxError, "\(lenientError)")
            }
        case "i_":
            let outcome = try #require(JSONTestSuiteInteropTests.implementationDefined[name], "no decision for \(name)")
            switch outcome {
            case .accept(let check):
                let value = try strict.get().value
                #expect(check(value), "\(value.serialized().prefix(200))")
                #expect(try lenient.get().value == value)
            case .reject(let text):
                for result in [strict, lenient] {
                    guard case .failure(let error) = result, let syntaxError = error as? JSONSyntaxError else {
                        Issue.record("\(name) was not refused with a syntax error: \(result)")
                        continue
                    }
                    #expect(syntaxError.message.contains(text), "\(syntaxError)")
                }
            }
        default:
            Issue.record("unexpected file name \(name)")
        }
    }

    @Test(
        "the decision table covers exactly the i_ files, and the lenient exceptions exist",
        .enabled(if: present, skipNote))
    func tableCoversFiles() {
        let names = Set(JSONTestSuiteInteropTests.files)
        #expect(Set(JSONTestSuiteInteropTests.implementationDefined.keys) == names.filter { $0.hasPrefix("i_") })
        #expect(JSONTestSuiteInteropTests.lenientlyAccepted.isSubset(of: names))
        #expect(names.filter { $0.hasPrefix("y_") }.count >= 90)
        #expect(names.filter { $0.hasPrefix("n_") }.count >= 180)
    }

    @Test(
        "the 100000 opening brackets file is refused with a depth error, in both modes",
        .enabled(if: present, skipNote))
    func deepNesting() throws {
        let url = try #require(JSONTestSuiteInteropTests.directory).appendingPathComponent("n_structure_100000_opening_arrays.json")
        let bytes = try JSONTestSupport.bytes(of: url)
        for options in [JSONTestSupport.strict, JSONTestSupport.lenient] {
            let error = try #require(JSONTestSupport.syntaxError(bytes, options))
            #expect(error.message.hasPrefix("too deeply nested"))
            #expect(error.position.offset == 512)
        }
    }
}
