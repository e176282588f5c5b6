//! A [`Table`] as a Parquet file, through the `parquet` crate's column writers (no Arrow):
//! one row group, every column optional (nulls as definition levels), text as UTF-8
//! `BYTE_ARRAY` (logical type String), integers as `INT64`, floats as `DOUBLE`, times as
//! `INT64` timestamps (microseconds, UTC); uncompressed.

use std::path::Path;
use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use super::ExportError;
use super::table::{Cell, Kind, Table};

/// Writes `table` to `path`.
pub fn write(table: &Table, path: &Path) -> Result<(), ExportError> {
    let pq = |e: parquet::errors::ParquetError| ExportError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut fields = Vec::with_capacity(table.names.len());
    for (name, kind) in table.names.iter().zip(&table.kinds) {
        let (physical, logical) = match kind {
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Kind::Int => (Physical::INT64, None),
            Kind::Float => (Physical::DOUBLE, None),
            Kind::Timestamp => (
                Physical::INT64,
                Some(LogicalType::timestamp(
                    true,
                    parquet::basic::TimeUnit::MICROS,
                )),
            ),
        };
        let field = Type::primitive_type_builder(name, physical)
            .with_repetition(Repetition::OPTIONAL)
            .with_logical_type(logical)
            .build()
            .map_err(pq)?;
        fields.push(Arc::new(field));
    }
    let schema = Type::group_type_builder("storlab")
        .with_fields(fields)
        .build()
        .map_err(pq)?;
    let file = std::fs::File::create(path).map_err(|source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let props = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), props).map_err(pq)?;
    let mut group = writer.next_row_group().map_err(pq)?;
    let mut col = 0;
    while let Some(mut column) = group.next_column().map_err(pq)? {
        let cells = (0..table.rows.len()).map(|r| table.cell(r, col));
        let def: Vec<i16> = cells.clone().map(|c| i16::from(*c != Cell::Null)).collect();
        match table.kinds[col] {
            Kind::Text => {
                let v: Vec<ByteArray> = cells
                    .filter_map(|c| match c {
                        Cell::Text(s) => Some(ByteArray::from(s.as_str())),
                        _ => None,
                    })
                    .collect();
                column
                    .typed::<ByteArrayType>()
                    .write_batch(&v, Some(&def), None)
            }
            Kind::Int | Kind::Timestamp => {
                let v: Vec<i64> = cells
                    .filter_map(|c| match c {
                        Cell::Int(i) | Cell::Timestamp(i, _) => Some(*i),
                        _ => None,
                    })
                    .collect();
                column
                    .typed::<Int64Type>()
                    .write_batch(&v, Some(&def), None)
            }
            Kind::Float => {
                let v: Vec<f64> = cells
                    .filter_map(|c| match c {
                        Cell::Float(f) => Some(*f),
                        _ => None,
                    })
                    .collect();
                column
                    .typed::<DoubleType>()
                    .write_batch(&v, Some(&def), None)
            }
        }
        .map_err(pq)?;
        column.close().map_err(pq)?;
        col += 1;
    }
    group.close().map_err(pq)?;
    writer.close().map_err(pq)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    #[test]
    fn a_table_reads_back_with_its_nulls_and_kinds() {
        let mut t = Table::default();
        t.push_row();
        t.text("run_id", "r1");
        t.count("ops", 10);
        t.float("a.read.rate_ops", 2.5);
        t.push_row();
        t.text("run_id", "r2");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write(&t, &path).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 2);
        let rows: Vec<Vec<(String, Field)>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().into_columns())
            .collect();
        assert_eq!(
            rows[0],
            [
                ("run_id".to_string(), Field::Str("r1".into())),
                ("ops".to_string(), Field::Long(10)),
                ("a.read.rate_ops".to_string(), Field::Double(2.5)),
            ]
        );
        assert_eq!(rows[1][1], ("ops".to_string(), Field::Null));
        assert_eq!(rows[1][2].1, Field::Null);
    }
}
