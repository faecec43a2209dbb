/** A picture's size as its header states it, and the file's size: what readPngHeader and readJpegHeader return. */
export interface PictureHeader {
  width: number;
  height: number;
  fileSize: number;
}
