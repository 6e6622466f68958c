//! Flow lists read from files: the `explicit` CSV format and HPCC's `flow.txt`.
//!
//! * CSV: a header naming the columns `src,dst,size,start` in any order, plus an optional
//!   `deadline` column; then one flow per row. `size` is bytes (or a string with a unit such
//!   as `64KB`); `start` and `deadline` are numbers in the workload's `time_unit` (or strings
//!   with a unit such as `1.5ms`); an empty deadline cell means no deadline. Blank lines and
//!   lines starting with `#` are skipped.
//! * HPCC (`alibaba-edu/High-Precision-Congestion-Control`, `mix/flow.txt`): the first line is
//!   the number of flows, then one flow per line as
//!   `src dst priority dport size start_time_seconds`. The priority group and destination port
//!   are checked to be whole numbers and otherwise ignored; dcnsim's transports choose priorities.
//!
//! Errors carry the 1-based line number.

use super::error::FlowFileProblem;
use super::FlowSpec;
use crate::units::{Bytes, Time};

type LineError = (usize, FlowFileProblem);

fn syntax(line: usize, message: String) -> LineError {
    (line, FlowFileProblem::Syntax { message })
}

/// Non-blank, non-comment lines with their 1-based numbers.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

fn host(cell: &str, line: usize, what: &str, num_hosts: u32) -> Result<u32, LineError> {
    let h: u64 =
        cell.parse().map_err(|_| syntax(line, format!("{what} '{cell}' is not a host index (a whole number)")))?;
    if h >= num_hosts as u64 {
        return Err((line, FlowFileProblem::UnknownHost { host: h, num_hosts }));
    }
    Ok(h as u32)
}

/// A time cell: a bare number in `unit_ps` picoseconds, or a string with its own unit.
fn time_cell(cell: &str, line: usize, what: &str, unit_ps: u64) -> Result<Time, LineError> {
    if let Ok(v) = cell.parse::<u64>() {
        return v.checked_mul(unit_ps).map(Time).ok_or_else(|| syntax(line, format!("{what} '{cell}' is too large")));
    }
    if let Ok(v) = cell.parse::<f64>() {
        let ps = v * unit_ps as f64;
        if !ps.is_finite() || ps < 0.0 || ps >= u64::MAX as f64 {
            return Err(syntax(line, format!("{what} '{cell}' must be a non-negative time")));
        }
        return Ok(Time(ps.round() as u64));
    }
    Time::parse(cell).map_err(|e| syntax(line, format!("{what} '{cell}': {e}")))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    Src,
    Dst,
    Size,
    Start,
    Deadline,
}

const COLUMNS: [(&str, Col); 5] =
    [("src", Col::Src), ("dst", Col::Dst), ("size", Col::Size), ("start", Col::Start), ("deadline", Col::Deadline)];

/// Parse an `explicit` CSV flow list; bare time numbers are in units of `unit_ps` picoseconds.
pub(crate) fn parse_csv(text: &str, unit_ps: u64, num_hosts: u32) -> Result<Vec<FlowSpec>, LineError> {
    let mut lines = data_lines(text);
    let Some((header_line, header)) = lines.next() else {
        return Err((1, FlowFileProblem::Empty));
    };
    let mut cols: Vec<Col> = Vec::new();
    for name in header.split(',').map(|c| c.trim().to_ascii_lowercase()) {
        let Some(&(_, col)) = COLUMNS.iter().find(|(n, _)| *n == name) else {
            return Err((header_line, FlowFileProblem::UnknownColumn { column: name }));
        };
        if cols.contains(&col) {
            return Err((header_line, FlowFileProblem::DuplicateColumn { column: name }));
        }
        cols.push(col);
    }
    for (name, col) in &COLUMNS[..4] {
        if !cols.contains(col) {
            return Err((header_line, FlowFileProblem::MissingColumn { column: name }));
        }
    }

    let mut flows = Vec::new();
    for (line, row) in lines {
        let cells: Vec<&str> = row.split(',').map(str::trim).collect();
        if cells.len() != cols.len() {
            return Err((line, FlowFileProblem::WrongCellCount { expected: cols.len(), got: cells.len() }));
        }
        let mut f = FlowSpec { src: 0, dst: 0, size: Bytes(0), start: Time::ZERO, deadline: None, background: false };
        for (&col, &cell) in cols.iter().zip(&cells) {
            match col {
                Col::Src => f.src = host(cell, line, "src", num_hosts)?,
                Col::Dst => f.dst = host(cell, line, "dst", num_hosts)?,
                Col::Size => {
                    f.size = Bytes::parse_or_bytes(cell).map_err(|e| syntax(line, format!("size '{cell}': {e}")))?;
                    if f.size.0 == 0 {
                        return Err((line, FlowFileProblem::ZeroSize));
                    }
                }
                Col::Start => f.start = time_cell(cell, line, "start", unit_ps)?,
                Col::Deadline if cell.is_empty() => {}
                Col::Deadline => {
                    let d = time_cell(cell, line, "deadline", unit_ps)?;
                    if d == Time::ZERO {
                        return Err((line, FlowFileProblem::ZeroDeadline));
                    }
                    f.deadline = Some(d);
                }
            }
        }
        if f.src == f.dst {
            return Err((line, FlowFileProblem::SelfFlow { host: f.src }));
        }
        flows.push(f);
    }
    Ok(flows)
}

/// Parse an HPCC `flow.txt`.
pub(crate) fn parse_hpcc(text: &str, num_hosts: u32) -> Result<Vec<FlowSpec>, LineError> {
    let mut lines = data_lines(text);
    let Some((count_line, count)) = lines.next() else {
        return Err((1, FlowFileProblem::Empty));
    };
    let declared: u64 = count
        .parse()
        .map_err(|_| syntax(count_line, format!("the first line must be the number of flows, got '{count}'")))?;
    let mut flows = Vec::new();
    let mut last_line = count_line;
    for (line, row) in lines {
        last_line = line;
        if flows.len() as u64 == declared {
            let found = declared + 1 + data_lines(text).filter(|&(l, _)| l > line).count() as u64;
            return Err((line, FlowFileProblem::CountMismatch { declared, found }));
        }
        let cells: Vec<&str> = row.split_whitespace().collect();
        if cells.len() != 6 {
            return Err((line, FlowFileProblem::WrongCellCount { expected: 6, got: cells.len() }));
        }
        let src = host(cells[0], line, "src", num_hosts)?;
        let dst = host(cells[1], line, "dst", num_hosts)?;
        for (what, cell) in [("priority", cells[2]), ("dport", cells[3])] {
            cell.parse::<u64>().map_err(|_| syntax(line, format!("{what} '{cell}' is not a whole number")))?;
        }
        let size: u64 = cells[4]
            .parse()
            .map_err(|_| syntax(line, format!("size '{}' is not a whole number of bytes", cells[4])))?;
        if size == 0 {
            return Err((line, FlowFileProblem::ZeroSize));
        }
        let secs: f64 = cells[5]
            .parse()
            .map_err(|_| syntax(line, format!("start time '{}' is not a number of seconds", cells[5])))?;
        if !secs.is_finite() || secs < 0.0 || secs * 1e12 >= u64::MAX as f64 {
            return Err(syntax(line, format!("start time '{}' must be a non-negative number of seconds", cells[5])));
        }
        if src == dst {
            return Err((line, FlowFileProblem::SelfFlow { host: src }));
        }
        flows.push(FlowSpec {
            src,
            dst,
            size: Bytes(size),
            start: Time::from_secs_f64(secs),
            deadline: None,
            background: false,
        });
    }
    if (flows.len() as u64) < declared {
        return Err((last_line, FlowFileProblem::CountMismatch { declared, found: flows.len() as u64 }));
    }
    Ok(flows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::PS_PER_US;

    #[test]
    fn csv_reads_columns_in_any_order_with_units() {
        let text = "# flows\nstart,src,dst,size,deadline\n0,0,1,1000,\n2.5,1,0,64KB,100\n3us,2,3,5,1ms\n";
        let f = parse_csv(text, PS_PER_US, 4).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!((f[0].src, f[0].dst, f[0].size, f[0].start, f[0].deadline), (0, 1, Bytes(1000), Time(0), None));
        assert_eq!(f[1].size, Bytes(64_000));
        assert_eq!(f[1].start, Time(2_500_000));
        assert_eq!(f[1].deadline, Some(Time::us(100)));
        assert_eq!(f[2].start, Time::us(3));
        assert_eq!(f[2].deadline, Some(Time::ms(1)));
    }

    #[test]
    fn csv_errors_name_the_line() {
        let e = parse_csv("src,dst,size,start\n0,1,10,0\n0,9,10,0\n", PS_PER_US, 4).unwrap_err();
        assert_eq!(e, (3, FlowFileProblem::UnknownHost { host: 9, num_hosts: 4 }));
        let e = parse_csv("src,dst,size\n", PS_PER_US, 4).unwrap_err();
        assert_eq!(e, (1, FlowFileProblem::MissingColumn { column: "start" }));
        let e = parse_csv("src,dst,size,start,prio\n", PS_PER_US, 4).unwrap_err();
        assert!(matches!(e, (1, FlowFileProblem::UnknownColumn { .. })));
        let e = parse_csv("src,dst,size,start\n\n1,1,10,0\n", PS_PER_US, 4).unwrap_err();
        assert_eq!(e, (3, FlowFileProblem::SelfFlow { host: 1 }));
        let e = parse_csv("src,dst,size,start\n1,2,0,0\n", PS_PER_US, 4).unwrap_err();
        assert_eq!(e, (2, FlowFileProblem::ZeroSize));
        let e = parse_csv("src,dst,size,start\n1,2,10\n", PS_PER_US, 4).unwrap_err();
        assert_eq!(e, (2, FlowFileProblem::WrongCellCount { expected: 4, got: 3 }));
        let e = parse_csv("src,dst,size,start\n1,2,10,-3\n", PS_PER_US, 4).unwrap_err();
        assert!(matches!(e, (2, FlowFileProblem::Syntax { .. })));
        assert!(matches!(parse_csv("", PS_PER_US, 4), Err((1, FlowFileProblem::Empty))));
    }

    #[test]
    fn hpcc_flow_txt() {
        let text = "3\n2 1 3 100 200000 2.000000001\n0 3 3 100 1000 2\n1 2 3 100 5 0.5\n";
        let f = parse_hpcc(text, 4).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!((f[0].src, f[0].dst, f[0].size), (2, 1, Bytes(200_000)));
        assert_eq!(f[0].start, Time(2_000_000_001_000));
        assert_eq!(f[2].start, Time(500_000_000_000));
        let e = parse_hpcc("2\n0 1 3 100 10 0\n", 4).unwrap_err();
        assert_eq!(e, (2, FlowFileProblem::CountMismatch { declared: 2, found: 1 }));
        let e = parse_hpcc("1\n0 1 3 100 10 0\n1 0 3 100 10 0\n\n2 0 3 100 10 0\n", 4).unwrap_err();
        assert_eq!(e, (3, FlowFileProblem::CountMismatch { declared: 1, found: 3 }));
        let e = parse_hpcc("1\n0 7 3 100 10 0\n", 4).unwrap_err();
        assert_eq!(e, (2, FlowFileProblem::UnknownHost { host: 7, num_hosts: 4 }));
        let e = parse_hpcc("1\n0 1 3 100 10\n", 4).unwrap_err();
        assert_eq!(e, (2, FlowFileProblem::WrongCellCount { expected: 6, got: 5 }));
        let e = parse_hpcc("x\n", 4).unwrap_err();
        assert!(matches!(e, (1, FlowFileProblem::Syntax { .. })));
    }
}
