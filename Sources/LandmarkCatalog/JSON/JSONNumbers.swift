// JSONPullReader: numbers (RFC 8259 §6), scanned in the buffer and turned into `JSONNumber`s.
extension JSONPullReader {
    @inline(__always)
    private static func isDigit(_ byte: Int) -> Bool {
        byte >= 0x30 && byte <= 0x39
    }

    /// Scans a number (RFC 8259 §6) starting at `pos`, keeping it contiguous in the buffer.
    func scanNumber(build: Bool) throws -> JSONNumber {
        var k = 0
        var c = byte(ahead: 0)
        if c == 0x2D {  // '-'
            k = 1
            c = byte(ahead: 1)
        }
        if c == 0x30 {  // '0'
            k += 1
            c = byte(ahead: k)
            if JSONPullReader.isDigit(c) {
                throw syntaxError(
                    "leading zeros are not allowed in numbers, found \(describe(ahead: k)) after '0'", at: pos + k)
            }
        } else if JSONPullReader.isDigit(c) {
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
        } else {
            throw syntaxError("expected a digit after '-', found \(describe(ahead: k))", at: pos + k)
        }
        let integerEnd = k
        var fractionEnd = k
        if c == 0x2E {  // '.'
            k += 1
            c = byte(ahead: k)
            guard JSONPullReader.isDigit(c) else {
                throw syntaxError("expected a digit after '.' in number, found \(describe(ahead: k))", at: pos + k)
            }
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
            fractionEnd = k
        }
        var exponentStart = -1
        if c == 0x65 || c == 0x45 {  // 'e' 'E'
            k += 1
            c = byte(ahead: k)
            exponentStart = k
            if c == 0x2B || c == 0x2D {  // '+' '-'
                k += 1
                c = byte(ahead: k)
            }
            guard JSONPullReader.isDigit(c) else {
                throw syntaxError(
                    "expected a digit in the exponent of a number, found \(describe(ahead: k))", at: pos + k)
            }
            repeat {
                k += 1
                c = byte(ahead: k)
            } while JSONPullReader.isDigit(c)
        }
        defer { pos += k }
        if !build { return JSONNumber(literal: "", int64Value: nil, doubleValue: 0) }
        return JSONPullReader.makeNumber(
            UnsafeBufferPointer(start: storage + pos, count: k),
            integerEnd: integerEnd, fractionEnd: fractionEnd, exponentStart: exponentStart)
    }

    /// Exact powers of ten that a `Double` holds (1e0 … 1e22).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Builds a ``JSONNumber`` from a literal already checked against the grammar.
    /// - Parameters:
    ///   - bytes: The literal.
    ///   - integerEnd: Index just past the integer digits.
    ///   - fractionEnd: Index just past the fraction digits (`integerEnd` when there is no fraction).
    ///   - exponentStart: Index just past the `e`/`E`, or -1 without an exponent.
    /// - Returns: The number, keeping the literal as written.
    static func makeNumber(
        _ bytes: UnsafeBufferPointer<UInt8>, integerEnd: Int, fractionEnd: Int, exponentStart: Int
    ) -> JSONNumber {
        let literal = String(decoding: bytes, as: UTF8.self)
        let negative = bytes[0] == 0x2D
        let integerStart = negative ? 1 : 0

        // Significant digits of integer and fraction, up to 19 (which fit a UInt64).
        var mantissa: UInt64 = 0
        var digits = 0
        var overflow = false
        for i in integerStart..<fractionEnd where i != integerEnd {
            let digit = UInt64(bytes[i] &- 0x30)
            if digits == 0 && digit == 0 { continue }
            if digits == 19 {
                overflow = true
                break
            }
            mantissa = mantissa &* 10 &+ digit
            digits += 1
        }

        var int64Value: Int64?
        if exponentStart < 0 && fractionEnd == integerEnd && !overflow {
            if negative {
                if mantissa <= UInt64(Int64.max) {
                    int64Value = -Int64(mantissa)
                } else if mantissa == UInt64(Int64.max) + 1 {
                    int64Value = Int64.min
                }
            } else if mantissa <= UInt64(Int64.max) {
                int64Value = Int64(mantissa)
            }
        }

        // Clinger's fast path: a mantissa of at most 2^53 and a power of ten up to 1e22 are both exact
        // Doubles, so one correctly rounded multiplication or division gives the correctly rounded result.
        if !overflow {
            var exponent = 0
            if exponentStart >= 0 {
                var i = exponentStart
                var exponentNegative = false
                if bytes[i] == 0x2B || bytes[i] == 0x2D {
                    exponentNegative = bytes[i] == 0x2D
                    i += 1
                }
                while i < bytes.count {
                    if exponent < 100_000 { exponent = exponent * 10 + Int(bytes[i] &- 0x30) }
                    i += 1
                }
                if exponentNegative { exponent = -exponent }
            }
            // Digits after the point that were counted as significant shift the exponent down.
            // (Leading zeros were left out of the mantissa, which does not change its value.)
            exponent -= fractionEnd > integerEnd ? fractionEnd - integerEnd - 1 : 0
            if mantissa == 0 {
                return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: negative ? -0.0 : 0.0)
            }
            if mantissa <= 1 << 53 && exponent >= -22 && exponent <= 22 {
                var value = Double(mantissa)
                if exponent >= 0 {
                    value *= powersOfTen[exponent]
                } else {
                    value /= powersOfTen[-exponent]
                }
                return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: negative ? -value : value)
            }
        }
        // Everything else: the C library's strtod (Swift's Double(String) uses strtod_l in the C locale).
        guard let value = Double(literal) else {
            preconditionFailure("a literal that passed the JSON number grammar was refused by Double(_:): \(literal)")
        }
        return JSONNumber(literal: literal, int64Value: int64Value, doubleValue: value)
    }
}
